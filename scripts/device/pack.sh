#!/usr/bin/env bash
# Packs what the GPU machine's scripts run into devbin/ (carried with `run`'s carry: .gl and
# devbin): bin.tar.xz with the moeoracle CLI built with -DMOE_NATIVE=OFF (no CPU-specific
# instructions: the GPU machine's CPU differs from this one), the shared libraries Ubuntu 24.04
# lacks (SPIR-V Cross, Highway), the A/B kernels of bench/kernels_ab (compiled by its build.sh and
# tiles.sh; the variants that lost their A/B from records/kernels_ab) and the scripts.
# Usage: scripts/device/pack.sh [BUILD_DIR] [EXTRA_BINARY...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}; shift || true
grep -q "MOE_NATIVE:BOOL=OFF" "$build/CMakeCache.txt" || { echo "pack.sh: $build is not a -DMOE_NATIVE=OFF build" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/kernels_ab" "$root/devbin"
cp "$build/cli/moeoracle" "$stage/"
for extra in "$@"; do cp "$extra" "$stage/"; done
strip "$stage"/moeoracle
for l in libspirv-cross-c-shared.so.0 libhwy.so.1; do cp -L "/lib/x86_64-linux-gnu/$l" "$stage/lib/"; done
bash "$root/bench/kernels_ab/build.sh" >/dev/null
bash "$root/bench/kernels_ab/tiles.sh" >/dev/null
cp "$root"/bench/kernels_ab/*.spv "$root"/bench/kernels_ab/*.json "$stage/kernels_ab/"
cp "$root"/scripts/device/*.sh "$root/bench/perf_position.py" "$root/bench/flush_ab.py" "$stage/"
mv "$stage/perf_position.py" "$stage/bench_perf_position.py"
tar -C "$stage" -cJf "$root/devbin/bin.tar.xz" .
cp "$root"/scripts/device/*.sh "$root/devbin/"
# lavapipe for the GPU machine's CPU (gpu_issue13.sh lvpseeds): this machine's Mesa lavapipe and the
# libraries it loads that Ubuntu may lack, with an ICD file whose path the script fills in. Once.
if [ ! -f "$root/devbin/lvp.tar.xz" ]; then
  lvp=$(mktemp -d)
  mkdir -p "$lvp/lib" "$lvp/icd"
  so=/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
  for l in $so $(ldd $so | awk '{print $3}' | grep -vE 'libc\.so|libm\.so|libstdc|libgcc_s|libpthread|ld-linux'); do
    cp -L "$l" "$lvp/lib/"
  done
  echo '{"ICD": {"api_version": "1.1.230", "library_path": "LIBDIR/libvulkan_lvp.so"}, "file_format_version": "1.0.0"}' \
    >"$lvp/icd/lvp.json"
  tar -C "$lvp" -cf - lib icd | xz -T2 -6 >"$root/devbin/lvp.tar.xz"
  rm -rf "$lvp"
fi
ls -la "$root/devbin/bin.tar.xz"
