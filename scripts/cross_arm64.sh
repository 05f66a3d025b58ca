#!/usr/bin/env bash
# kernels_cpu and its tests cross-compiled for 64-bit ARM with Debian's cross toolchain and run
# under qemu-user (docs/portability.md). Debian 12, as root; installs what it needs.
# Usage: scripts/cross_arm64.sh [BUILD_DIR]   (default build-arm64)
#   QEMU_CPU=max          the emulated CPU (default max; the dispatch picks NEON: SVE is disabled)
# One OpenMP thread: under qemu-user a second thread of these kernels spins for minutes where the
# native run takes milliseconds (an emulation cost; threads are tested natively).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-arm64}
if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null ||
   ! dpkg -s libhwy-dev:arm64 libgtest-dev:arm64 >/dev/null 2>&1; then
  dpkg --add-architecture arm64
  apt-get update
  apt-get install -y --no-install-recommends g++-aarch64-linux-gnu qemu-user cmake make libeigen3-dev \
    libhwy-dev:arm64 libgtest-dev:arm64
fi
cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DMOE_KERNELS_ONLY=ON \
  -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
export OMP_NUM_THREADS=1
fails=0
for t in "$build"/tests/*_test; do
  s=$(date +%s)
  if out=$(qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "${QEMU_CPU:-max}" "$t" 2>&1); then rc=0; else rc=$?; fi
  echo "$(basename "$t"): rc $rc in $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' <<<"$out" | tr '\n' ' ')"
  grep -q "SIMD targets" <<<"$out" && grep "SIMD targets" <<<"$out"
  [ $rc -eq 0 ] || { fails=$((fails + 1)); grep -E -A6 "Failure" <<<"$out" | head -40; }
done
echo "aarch64 under qemu ($(qemu-aarch64 --version | head -1)): $fails test binaries failed"
[ $fails -eq 0 ]
