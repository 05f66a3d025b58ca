#!/usr/bin/env bash
# Builds the Debian packages (moeoracle, libmoeoracle-dev) from ./build into ./build/packages:
# CPack (cmake/package.cmake) with dpkg-shlibdeps for the runtime dependencies. Builds first if
# needed. Usage: scripts/package_deb.sh   (as root on Debian 12; installs dpkg-dev if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
dpkg-query -W -f='${Status}' dpkg-dev 2>/dev/null | grep -q "install ok installed" ||
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null; }
[ -f build/CMakeCache.txt ] || bash scripts/build.sh
cmake --build build -j"$(nproc)" >/dev/null
mkdir -p build/packages
(cd build && cpack -G DEB -B "$PWD/packages" >/dev/null)
rm -rf build/packages/_CPack_Packages
ls -l build/packages/*.deb
for d in build/packages/*.deb; do echo "== $d"; dpkg-deb -f "$d" Package Version Depends Recommends; done
