#!/usr/bin/env bash
# The main job: install what is needed, build, then
#   1. the CPU op self-check: every op's f32 tier and fast tier against the f64 truth at the real
#      shapes of Qwen3.5-397B-A17B and Qwen3.6-35B-A3B;
#   2. a synthetic model (moeflux artifacts, both layer kinds), run on the CPU by the fast backend
#      and by the truth, with every tap dumped, and the two dumps compared tap by tap;
#   3. the bundled Vulkan kernels compared with the CPU truth (lavapipe where there is no GPU);
#   4. the whole synthetic model run on those kernels against the truth, op by op (isolated and
#      free-running), ending with a self-contained HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DMOE_BUILD_TESTS=OFF -DMOE_BUILD_BENCH=OFF
bin=./build/cli/moeoracle
out=build/demo
rm -rf "$out" && mkdir -p "$out"

echo "== 1. op self-check"
$bin selfcheck

echo; echo "== 2. a synthetic model, run by the oracle"
$bin fixture --preset tiny --format moeflux --seed 7 --out "$out/model"
tokens=1,17,42,300,7,511,256,99,3,64,128,200
$bin run --model "$out/model" --tokens $tokens --backend fast --dump "$out/fast.safetensors"
$bin run --model "$out/model" --tokens $tokens --backend ref64 --dump "$out/ref64.safetensors" >/dev/null
echo; echo "== fast backend against the f64 truth, tap by tap"
$bin diff "$out/ref64.safetensors" "$out/fast.safetensors" --threshold 1e-4

echo; echo "== 3. the bundled GPU kernels against the CPU truth on the default Vulkan device"
$bin devices
$bin compare --seeds 2 --junit "$out/compare.xml"

echo; echo "== 4. the whole model on the GPU kernels against the CPU truth (bisect)"
$bin bisect --model "$out/model" --tokens $tokens --prefill 4 --mode free --html "$out/report_free.html"
$bin bisect --model "$out/model" --tokens $tokens --prefill 4 --mode isolated --html "$out/report.html"
echo; echo "HTML report: $(pwd)/$out/report.html (free-running drift: $(pwd)/$out/report_free.html)"
