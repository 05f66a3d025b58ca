#!/usr/bin/env bash
# A/B timing of matmul_q (issue 13): compiles the bundled matmul_q{2,4,8} (register-tiled: R rows
# x TT tokens per workgroup) and the previous matmul_q4 (records/kernels_ab/matmul_q4_word.comp) to
# SPIR-V here, and writes three manifests next to them:
#   matmul.json       the bundled matmul_q kernels alone (their seed records)
#   matmul_ab.json    the previous matmul_q4, then the bundled one: every case on both, one process
#   matmul_tune.json  the previous matmul_q4, then the bundled one at R, TT and WG (`let`s overridden)
#   q4_tune.json      the bundled matvec_q4 at other R, U and WG (its `let`s overridden)
# Usage: bash bench/kernels_ab/tiles.sh   (from anywhere); then e.g.
#   moeoracle compare --ops matmul_q --shapes perf --perf --kernels bench/kernels_ab/matmul_tune.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shaders=$here/../../compare/shaders
lost=$here/../../records/kernels_ab  # the variants that lost their A/B
for b in 2 4 8; do glslc --target-env=vulkan1.2 -O "$shaders/matmul_q$b.comp" -o "$here/matmul_q$b.spv"; done
glslc --target-env=vulkan1.2 -O "$lost/matmul_q4_word.comp" -o "$here/matmul_q4_word.spv"
glslc --target-env=vulkan1.2 -O "$shaders/matvec_q4.comp" -o "$here/matvec_q4.spv"
python3 - "$here" "$shaders" "$lost" <<'PY'
import copy, json, sys
here, shaders, lost = sys.argv[1], sys.argv[2], sys.argv[3]
bundled = [json.load(open(f"{shaders}/matmul_q{b}.json")) for b in (4, 8, 2)]
word = json.load(open(f"{lost}/matmul_q4_word.json"))
def write(name, title, kernels):
    json.dump({"name": title, "version": 1, "kernels": kernels}, open(f"{here}/{name}", "w"), indent=1)
write("matmul.json", "the bundled matmul_q kernels alone", bundled)
write("matmul_ab.json", "matmul_q4 before issue 13's tiling, and bundled", [word, bundled[0]])
variants = []  # (R, TT, subgroups per workgroup); the bundled default is R = 8 at >= 8192 rows, TT 8, 1
for r, tt, w in [(8, 8, 1), (4, 8, 1), (2, 8, 1), (8, 4, 1), (16, 4, 1), (8, 16, 1), (8, 8, 4), (4, 8, 4)]:
    k = copy.deepcopy(bundled[0])
    k["name"] = f"mm4_R{r}_T{tt}_W{w}"
    k["let"] = {"R": f"min({r}, max(1, floor(rows / 1024)))", "TT": f"min({tt}, tokens)",
                "WG": f"min(128, min(max_workgroup_invocations, {w} * subgroup_size))"}
    variants.append(k)
write("matmul_tune.json", "matmul_q4 tiles", [word] + variants)
q4 = json.load(open(f"{shaders}/matvec_q4.json"))
variants = []  # (R, U, WG); bundled at >= 65536 rows: R 8, U 1, WG 128 (a row's quads in one step at cols 4096)
for r, u, wg in [(8, 1, 128), (16, 1, 128), (4, 1, 128), (8, 2, 128), (8, 1, 64), (8, 1, 256), (16, 2, 128), (4, 2, 256)]:
    k = copy.deepcopy(q4)
    k["name"] = f"q4_R{r}_U{u}_WG{wg}"
    k["let"] = {"R": f"min({r}, max(1, floor(rows / 1024)))", "U": str(u),
                "WG": f"min(min({wg}, min(max_workgroup_invocations, max_workgroup_subgroups * subgroup_size)), max(R, max(subgroup_size, ceil_div(cols, 32 * U * subgroup_size) * subgroup_size)))"}
    variants.append(k)
write("q4_tune.json", "matvec_q4 tiles", variants)
PY
echo "wrote $here/matmul.json, matmul_ab.json, matmul_tune.json and q4_tune.json"
