#!/usr/bin/env bash
# Builds ggml-base from a ggml checkout (or llama.cpp's ggml/ folder) and runs
# dequant_crosscheck.cpp against this tree's kernels_cpu library.
# Usage: scripts/ggml_crosscheck/dequant_crosscheck.sh GGML_DIR [BUILD_DIR (default build)]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
ggml=$(cd "$1" && pwd); build=${2:-$root/build}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake -S "$ggml" -B "$work/ggml" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_BUILD_TESTS=OFF \
  -DGGML_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/ggml" --target ggml-base -j"$(nproc)" >/dev/null
lib=$(dirname "$(find "$work/ggml" -name 'libggml-base.so' | head -1)")
g++ -std=c++20 -O2 "$here/dequant_crosscheck.cpp" -I"$ggml/include" -I"$root/kernels_cpu" \
  "$build/kernels_cpu/libkernels_cpu.a" -L"$lib" -lggml-base -Wl,-rpath,"$lib" -o "$work/crosscheck"
echo "ggml $(git -C "$ggml" rev-parse --short HEAD 2>/dev/null || echo '(not a git checkout)')"
"$work/crosscheck"
