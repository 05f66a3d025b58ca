#!/usr/bin/env bash
# The .deb packages on a fresh Debian 12: debootstrap a bookworm root (once; reused), install
# build/packages/*.deb there with apt (which pulls their dependencies from Debian's archive), then
# inside: `moeoracle --version`, `moeoracle selfcheck`, `moeoracle compare --seeds 1` on lavapipe,
# `python3 -c "import moeoracle"`, and examples/consumer built against the installed -dev package.
# The output is the record (docs/packaging.md). Usage, as root:
#   scripts/package_deb.sh && scripts/deb_chroot_test.sh [ROOT_DIR]   (default /var/tmp/moe-bookworm)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/var/tmp/moe-bookworm}
mirror=${MOE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
command -v debootstrap >/dev/null ||
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
ls "$src"/build/packages/*.deb >/dev/null
if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "debootstrap bookworm into $root ..."
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mounted=()
cleanup() { for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
for m in proc sys dev; do
  mkdir -p "$root/$m"; mount --rbind "/$m" "$root/$m"; mounted+=("$root/$m")
done
rm -rf "$root/opt/moe" && mkdir -p "$root/opt/moe"
cp "$src"/build/packages/*.deb "$root/opt/moe/"
cp -r "$src/examples/consumer" "$root/opt/moe/consumer"
cat > "$root/opt/moe/inside.sh" <<'INSIDE'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
echo "== $(. /etc/os-release; echo "$PRETTY_NAME"), $(uname -m)"
apt-get update -qq
# A root reused from an earlier run: the packages of that run go first (same version: apt would keep them).
apt-get purge -y -qq moeoracle libmoeoracle-dev >/dev/null 2>&1 || true
apt-get install -y -qq --no-install-recommends /opt/moe/moeoracle_*.deb mesa-vulkan-drivers >/dev/null
echo "== moeoracle --version"; moeoracle --version
echo "== moeoracle selfcheck"; moeoracle selfcheck | tail -3
echo "== moeoracle compare --seeds 1"; moeoracle compare --seeds 1 | tail -2
echo "== python3 -c 'import moeoracle'"
python3 -c "import moeoracle, sys; print('moeoracle from', moeoracle.__file__)"
apt-get install -y -qq --no-install-recommends /opt/moe/libmoeoracle-dev_*.deb cmake make g++ >/dev/null  # the consumer's own toolchain
echo "== examples/consumer against the installed libmoeoracle-dev"
cmake -S /opt/moe/consumer -B /opt/moe/consumer-build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build /opt/moe/consumer-build -j"$(nproc)" >/dev/null
/opt/moe/consumer-build/consumer
echo "== all passed"
INSIDE
chroot "$root" /bin/bash /opt/moe/inside.sh
