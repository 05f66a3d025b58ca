#!/usr/bin/env bash
# A/B timing of the matvec_q kernels in one process: compiles main's kernels before issue 13
# (records/kernels_ab/matvec_q{2,4,8}_before.comp, renamed "matvec_q*_before") and the current bundled
# ones (compare/shaders/matvec_q{2,4,8}.comp) to SPIR-V here, as the build compiles the bundled ones
# (glslc --target-env=vulkan1.2 -O; glslangValidator -V if there is no glslc), and writes these
# manifests next to them. The variants that lost their A/B (their sources, entries and the scripts
# only they use) are records/kernels_ab/ (its README says what each tried and what refuted it);
# they are compiled from there, their SPIR-V and every manifest written here, as before:
#   before.json  the before kernels alone: moeoracle compare --ops matvec_q --kernels bench/kernels_ab/before.json
#   q2.json, q4.json, q8.json  a bundled matvec_q alone (its seed records: --kernels
#                bench/kernels_ab/q4.json); q2_glsl.json etc. the same from the GLSL (its mutants:
#                moeoracle mutate --kernels bench/kernels_ab/q4_glsl.json)
#   ab.json      before, current and variant kernels (matvec_q4_word/vec2.comp, matvec_q2_word.comp,
#                matvec_q8_word.comp, matvec_q2_term.comp: the per-term 2-bit form, bundled until the
#                factored one): every case runs on each of them, in that order, in one process
#   q2ab.json    the bundled (factored) matvec_q2 and the per-term one; q4ab.json, q8ab.json the
#                same for matvec_q4, matvec_q8 (q8tune.json: matvec_q8 at other R / U / WG)
#   tune.json    matvec_q4 R / U points of the word, 16- and 8-byte kernels of 2026-11-26 (a copy
#                of records/kernels_ab/tune.json, whose SPIR-V names it expects here)
#   tune_q2q8.json  the bundled matvec_q2 and matvec_q8 at other R, U and WG (`let`s only: tune.py)
#   permute_decode_tune.json  the decode chain's stages at other R, U and WG (permute_decode_tune.py)
# and, for the permute-fuse chain (moe_permute_fuse = permute_gate_up -> permute_down_scatter):
#   permute.json       the bundled stage kernels alone (their seed records); permute_decode.json
#                      permute_gate_up_decode and down_scatter (the one-token records); permute_glsl.json
#                      the same from their GLSL (moeoracle mutate --kernels)
#   permute_ab.json    the bundled stage kernels and the variants (permute_gate_up_vec.comp, 16-byte
#                      loads; permute_down_scatter_word.comp, the bundled one until 2026-11-27): each
#                      stage op's case runs on all; moe_permute_fuse's on the bundled chain, the word
#                      chain (the old bundle) and the vec chain (both stages 16-byte)
#   permute_fvec.json  the bundled stages, permute_gate_up_fvec.comp (vec, factored per quad: meant
#                      for decode) and the chain fvec -> bundled down_scatter; permute_fvec_alone.json
#                      the variant and its chain alone (their seed records)
#   permute_lat.json   the bundled stages, permute_down_scatter_lat.comp (bucket offsets in shared memory,
#                      weights and out loaded early) and the decode chain through it; permute_lat_alone.json
#                      the variant and that chain alone (their seed records)
#   permute_dfact.json the bundled stages, permute_down_scatter_fact.comp (factored per quad) and the
#                      decode chain permute_gate_up_decode -> it; permute_dfact_alone.json the variant
#                      and that chain alone (their seed records)
#   permute_tune.json  permute_gate_up_vec and the bundled down_scatter with other R / U lets
# Usage: bash bench/kernels_ab/build.sh   (from anywhere)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shaders=$here/../../compare/shaders
lost=$(cd "$here/../../records/kernels_ab" && pwd)  # the variants that lost their A/B
compile() {  # SRC OUT
  if command -v glslc >/dev/null; then
    glslc --target-env=vulkan1.2 -O "$1" -o "$2"
  else
    glslangValidator -V --target-env vulkan1.2 "$1" -o "$2" >/dev/null
  fi
}
before=() current=()
for b in 4 8 2; do
  compile "$lost/matvec_q${b}_before.comp" "$here/matvec_q${b}_before.spv"
  compile "$shaders/matvec_q$b.comp" "$here/matvec_q$b.spv"
  before+=("$lost/matvec_q${b}_before.json")
  current+=("$shaders/matvec_q$b.json")
done
# Variants that are not bundled: one word and 8 bytes of weights per lane (16 in the bundled ones;
# matvec_q{2,4,8}_word are the bundled kernels of 2026-11-25..27).
for v in q4_word q4_vec2 q2_word q8_word q2_term q4_term q8_term; do
  compile "$lost/matvec_$v.comp" "$here/matvec_$v.spv"
  current+=("$lost/matvec_$v.json")
done
manifest() {  # NAME ENTRY...: a manifest of these kernel entries
  local name=$1 sep=""
  shift
  printf '{"name": "%s", "version": 1, "kernels": [\n' "$name"
  for e in "$@"; do
    printf '%s' "$sep"
    cat "$e"
    sep=","
  done
  printf ']}\n'
}
manifest "matvec_q before issue 13" "${before[@]}" >"$here/before.json"
for b in 2 4 8; do
  manifest "the bundled matvec_q$b alone" "$shaders/matvec_q$b.json" >"$here/q$b.json"
  # The same entry from its GLSL (compiled by moeoracle): mutate needs the source to plant bugs in.
  sed "s#\"spirv\": \"matvec_q$b.spv\"#\"glsl\": \"../../compare/shaders/matvec_q$b.comp\"#" "$here/q$b.json" >"$here/q${b}_glsl.json"
done
manifest "matvec_q4: bundled (factored), per-term" "$shaders/matvec_q4.json" "$lost/matvec_q4_term.json" >"$here/q4ab.json"
# q4lop.json: the bundled matvec_q4 (two logic operations a code) and the one-operation form
# bundled from 7cec97e until the H100 A/B of 2026-11-28 (matvec_q4_lop.comp); the bundled matvec_q2
# (one operation) and its two-operation form before 7cec97e (matvec_q2_fact.comp)
compile "$lost/matvec_q4_lop.comp" "$here/matvec_q4_lop.spv"
compile "$lost/matvec_q2_fact.comp" "$here/matvec_q2_fact.spv"
manifest "matvec_q4 / matvec_q2: one or two logic operations a code" "$shaders/matvec_q4.json" "$lost/matvec_q4_lop.json" \
  "$shaders/matvec_q2.json" "$lost/matvec_q2_fact.json" >"$here/q4lop.json"
manifest "matvec_q2: bundled (factored), per-term" "$shaders/matvec_q2.json" "$lost/matvec_q2_term.json" >"$here/q2ab.json"
manifest "matvec_q8: bundled (factored), per-term" "$shaders/matvec_q8.json" "$lost/matvec_q8_term.json" >"$here/q8ab.json"
# q8tune.json: the bundled matvec_q8 at the 22 R / U / WG points its rule was picked from (H100,
# 2026-11-27 evening): R n is min(n, max(1, floor(rows / 1024))), W the workgroup's cap.
python3 - "$shaders/matvec_q8.json" "$here/q8tune.json" <<'EOF3'
import json, sys
bundled = json.load(open(sys.argv[1]))
def point(r, u, cap=128):
    v = json.loads(json.dumps(bundled))
    v["name"] = f"q8_R{r}_U{u}" + ("" if cap == 128 else f"_W{cap}")
    v["let"].update(R=f"min({r}, max(1, floor(rows / 1024)))", U=str(u))
    v["let"]["WG"] = v["let"]["WG"].replace("min(128,", f"min({cap},")
    return v
points = [(4, 2), (4, 1), (2, 2), (2, 1), (1, 2), (1, 1), (4, 2, 256), (2, 2, 256), (4, 1, 256), (2, 4),
          (4, 4), (4, 8), (8, 4), (8, 8), (3, 4), (2, 8), (4, 4, 64), (2, 4, 64), (4, 4, 256), (2, 2, 64), (8, 2)]
kernels = [bundled] + [point(*p) for p in points]
json.dump({"name": "matvec_q8: bundled and R / U / WG points", "version": 1, "kernels": kernels}, open(sys.argv[2], "w"), indent=1)
EOF3
manifest "matvec_q before issue 13 and current" "${before[@]}" "${current[@]}" >"$here/ab.json"
cp "$lost/tune.json" "$here/tune.json"
python3 "$here/tune.py" "$here/tune_q2q8.json" "$shaders/matvec_q2.json" "$shaders/matvec_q8.json"
python3 "$here/permute_decode_tune.py" "$here/permute_decode_tune.json" "$shaders/permute_gate_up_decode.json" \
  "$shaders/permute_down_scatter.json" >/dev/null
# q4q2tune.json: the bundled (factored) matvec_q4 and matvec_q2 at fewer rows per workgroup and
# more quads per lane (R 2 and U 4 were matvec_q8's best, 2026-11-27 evening; R n as in q8tune).
python3 - "$shaders/matvec_q4.json" "$shaders/matvec_q2.json" "$here/q4q2tune.json" <<'EOF4'
import json, sys
def points(path, short, rus):
    bundled = json.load(open(path))
    out = [bundled]
    for r, u in rus:
        v = json.loads(json.dumps(bundled))
        v["name"] = f"{short}_R{r}_U{u}"
        v["let"].update(R=f"min({r}, max(1, floor(rows / 1024)))", U=str(u))
        out.append(v)
    return out
kernels = points(sys.argv[1], "q4", [(2, 2), (2, 4), (4, 2), (4, 4), (3, 4), (2, 8), (4, 8), (8, 4), (2, 1)])
kernels += points(sys.argv[2], "q2", [(2, 2), (2, 4), (4, 2), (4, 4), (2, 1), (4, 1), (8, 4), (2, 8)])
json.dump({"name": "matvec_q4 / q2: bundled and R / U points", "version": 1, "kernels": kernels}, open(sys.argv[3], "w"), indent=1)
EOF4
# Two A/B variants of matvec_q4 that both lost on the H100 (records/kernels_ab/README.md), each with the
# bundled entry first: q4pf.json, matvec_q4_pf.comp (the next step's loads issued before this step's
# arithmetic) at the bundled rule, at 2 and 4 steps per lane (a half / a quarter of the lanes per
# row) and at U = 1 with 4 steps; q4pg.json, matvec_q4_pg.comp (a persistent grid of at most G
# workgroups, spec id 2) at G 512 and 1024 (the bundled R rule) and at R 4 with G 1024 and 2048.
compile "$lost/matvec_q4_pf.comp" "$here/matvec_q4_pf.spv"
compile "$lost/matvec_q4_pg.comp" "$here/matvec_q4_pg.spv"
python3 - "$shaders/matvec_q4.json" "$here" <<'EOF2'
import json, sys
bundled = json.load(open(sys.argv[1]))
def variant(name, spirv, steps=1, u=None, r=None, g=None):
    e = json.loads(json.dumps(bundled))
    e["name"], e["spirv"] = name, spirv
    if steps > 1:
        old = "ceil_div(cols, 32 * U * subgroup_size)"
        assert old in e["let"]["WG"], e["let"]["WG"]
        e["let"]["WG"] = e["let"]["WG"].replace(old, f"ceil_div(cols, 32 * U * subgroup_size * {steps})")
    if u is not None:
        e["let"]["U"] = str(u)
    if r is not None:
        e["let"]["R"] = f"min({r}, max(1, floor(rows / 1024)))"
    if g is not None:
        e["let"]["G"] = str(g)
        e["specialization"].append({"id": 2, "value": "G"})
        e["dispatch"] = ["min(G, ceil_div(rows, R))", "1", "1"]
    return e
def write(path, title, kernels):
    json.dump({"name": title, "version": 1, "kernels": [bundled] + kernels}, open(path, "w"), indent=1)
pf, pg = "matvec_q4_pf.spv", "matvec_q4_pg.spv"
write(sys.argv[2] + "/q4pf.json", "matvec_q4: bundled, next-step prefetch variants",
      [variant("q4_pf", pf), variant("q4_pf_S2", pf, 2), variant("q4_pf_S4", pf, 4), variant("q4_pf_U1_S4", pf, 4, 1)])
write(sys.argv[2] + "/q4pg.json", "matvec_q4: bundled, persistent-grid variants",
      [variant("q4_pg_G512", pg, g=512), variant("q4_pg_G1024", pg, g=1024),
       variant("q4_pg_R4_G1024", pg, r=4, g=1024), variant("q4_pg_R4_G2048", pg, r=4, g=2048)])
EOF2

# The permute-fuse chain (issue 13). Bundled: permute_gate_up one word per lane (the 16-byte
# variant, permute_gate_up_vec.comp, was slower on the H100) and permute_down_scatter with 16-byte
# loads (its word kernel: permute_down_scatter_word.comp). The JSON is edited with python3.
for k in permute_gate_up permute_gate_up_decode permute_down_scatter; do compile "$shaders/$k.comp" "$here/$k.spv"; done
for k in permute_gate_up_vec permute_gate_up_fvec permute_down_scatter_word permute_down_scatter_fact \
         permute_down_scatter_lat; do compile "$lost/$k.comp" "$here/$k.spv"; done
python3 - "$shaders" "$here" "$lost" <<'EOF'
import json, sys
shaders, here, lost = sys.argv[1], sys.argv[2], sys.argv[3]
bundled = [json.load(open(f"{shaders}/{k}.json")) for k in ("permute_gate_up", "permute_gate_up_decode", "permute_down_scatter")]
gate_up, down = bundled[0], bundled[2]
others = [json.load(open(f"{lost}/{k}.json")) for k in ("permute_gate_up_vec", "permute_down_scatter_word")]
def write(name, title, kernels, sequences=None):
    m = {"name": title, "version": 1, "kernels": kernels}
    if sequences:
        m["sequences"] = sequences
    open(f"{here}/{name}", "w").write(json.dumps(m, indent=1) + "\n")
# A chain takes the first kernel of each stage that accepts the case, so one chain plan cannot hold
# two variants: the other chains are sequences of renamed copies bound to the whole op (a chain's
# stages bind the op's own tensor names).
def chain(name, entries):
    copies = [dict(e, name=f"{e['ops'][0]}_{name}_chain", ops=["moe_permute_fuse"]) for e in entries]
    return copies, {"name": f"permute_{name}_chain", "op": "moe_permute_fuse", "kernels": [c["name"] for c in copies]}
word_k, word_seq = chain("word", [gate_up, others[1]])   # the bundled chain before 2026-11-27
vec_k, vec_seq = chain("vec", [others[0], down])         # both stages with 16-byte loads
fvec = json.load(open(f"{lost}/permute_gate_up_fvec.json"))
fvec_k, fvec_seq = chain("fvec", [fvec, down])          # gate_up factored per quad (for decode)
write("permute.json", "the bundled permute stage kernels alone", bundled)
write("permute_decode.json", "permute_gate_up_decode and the bundled down_scatter: its records (one token)",
      [bundled[1], down])
# The same from their GLSL (moeoracle mutate needs the source): compiled at load by shaderc.
src = []
for e in bundled:
    g = {k: v for k, v in e.items() if k != "spirv"}
    g["glsl"] = "../../compare/shaders/" + e["spirv"][:-4] + ".comp"
    src.append(g)
write("permute_glsl.json", "the bundled permute stage kernels from their GLSL (for mutate)", src)
write("permute_ab.json", "permute stages: bundled, 16-byte gate_up, word down_scatter",
      bundled + others + word_k + vec_k, [word_seq, vec_seq])
write("permute_fvec.json", "permute stages: bundled, gate_up factored (fvec), its chain",
      bundled + [fvec] + fvec_k, [fvec_seq])
dfact = json.load(open(f"{lost}/permute_down_scatter_fact.json"))
dfact_k, dfact_seq = chain("dfact", [bundled[1], dfact])  # decode gate_up -> factored down_scatter
write("permute_dfact.json", "permute stages: bundled, down_scatter factored (dfact), its decode chain",
      bundled + [dfact] + dfact_k, [dfact_seq])
write("permute_dfact_alone.json", "permute_down_scatter_fact alone and its decode chain", [dfact] + dfact_k, [dfact_seq])
lat = json.load(open(f"{lost}/permute_down_scatter_lat.json"))
lat_k, lat_seq = chain("lat", [bundled[1], lat])  # decode gate_up -> down_scatter with fewer latencies
write("permute_lat.json", "permute stages: bundled, down_scatter with fewer serial latencies (lat), its decode chain",
      bundled + [lat] + lat_k, [lat_seq])
write("permute_lat_alone.json", "permute_down_scatter_lat alone and its decode chain", [lat] + lat_k, [lat_seq])
write("permute_fvec_alone.json", "permute_gate_up_fvec alone and its chain", [fvec] + fvec_k, [fvec_seq])
# Variants: the 16-byte gate_up's R at decode (a tile of one token; tiles of more tokens keep its
# rule) and U; down_scatter's R and U (P = the lanes a row's quads need at U quads per lane).
tune = []
gu, dn = others[0], down
for r in (1, 2, 4, 8):
    for u in (1, 2):
        lets = dict(gu["let"])
        lets["R"] = f"(TT == 1) * {r} + (TT > 1) * (1 + (TT <= 2 && inter % 2 == 0))"
        lets["U"] = str(u)
        tune.append(dict(gu, name=f"gate_up_vec_R{r}_U{u}", let=lets))
for r in (1, 2, 4):
    for u in (1, 2, 4):
        lets = dict(dn["let"], R=str(r), U=str(u))
        tune.append(dict(dn, name=f"down_scatter_R{r}_U{u}", let=lets))
write("permute_tune.json", "permute stage kernels: R and U variants", tune)
EOF
echo "wrote before, q{2,4,8}, q{2,4,8}_glsl, ab, tune_q2q8, permute, permute_glsl, permute_ab and permute_tune .json in $here"

# matvec_bf16 (issue 13): the bundled kernel (16-byte loads, R rows per workgroup) and the one
# bundled until 2026-11-27 (matvec_bf16_before.comp: an element per lane, a subgroup per row).
#   bf16.json      the bundled matvec_bf16 alone (its seed records); bf16_glsl.json from its GLSL
#   bf16tune.json  before, bundled, then the bundled SPIR-V at R 1/2/4/8 x U 1/2/4 (as min(R,
#                  rows / 1024)) and at the bundled R, U with at most 64 / 256 lanes
compile "$shaders/matvec_bf16.comp" "$here/matvec_bf16.spv"
compile "$lost/matvec_bf16_before.comp" "$here/matvec_bf16_before.spv"
python3 - "$shaders/matvec_bf16.json" "$here" "$lost" <<'EOF3'
import json, sys
bundled, here = json.load(open(sys.argv[1])), sys.argv[2]
before = json.load(open(sys.argv[3] + "/matvec_bf16_before.json"))
def write(name, title, kernels):
    open(f"{here}/{name}", "w").write(json.dumps({"name": title, "version": 1, "kernels": kernels}, indent=1) + "\n")
def variant(name, r=None, u=None, cap=None):
    e = json.loads(json.dumps(bundled))
    e["name"] = name
    if r is not None:
        e["let"]["R"] = f"min({r}, max(1, floor(rows / 1024)))"
    if u is not None:
        e["let"]["U"] = str(u)
    if cap is not None:
        assert e["let"]["WG"].startswith("min(min(128, "), e["let"]["WG"]
        e["let"]["WG"] = e["let"]["WG"].replace("min(min(128, ", f"min(min({cap}, ", 1)
    return e
write("bf16.json", "the bundled matvec_bf16 alone", [bundled])
g = {k: v for k, v in bundled.items() if k != "spirv"}
g["glsl"] = "../../compare/shaders/matvec_bf16.comp"
write("bf16_glsl.json", "the bundled matvec_bf16 from its GLSL (for mutate)", [g])
tune = [variant(f"bf16_R{r}_U{u}", r, u) for r in (1, 2, 4, 8) for u in (1, 2, 4)]
tune += [variant(f"bf16_C{c}", cap=c) for c in (64, 256)]
write("bf16tune.json", "matvec_bf16: before, bundled, R / U / WG variants", [before, bundled] + tune)
EOF3
echo "wrote bf16, bf16_glsl and bf16tune .json in $here"

# The shared-x variants of matvec_q{2,4,8} (issue 13; records/kernels_ab/sx.py): sx.json (each bundled kernel, then
# its variant), sx_only.json (the variants alone).
python3 "$lost/sx.py" "$here" "$shaders"
for b in 2 4 8; do compile "$here/matvec_q${b}_sx.comp" "$here/matvec_q${b}_sx.spv"; done
echo "wrote sx and sx_only .json in $here"

# One logic operation with one constant a code (records/kernels_ab/lop.py): matvec_q8_lop.comp, and lop.json with the
# bundled matvec_q8 followed by its variant (matvec_q2 and matvec_q4 are bundled in that form).
python3 "$lost/lop.py" "$here" "$shaders"
compile "$here/matvec_q8_lop.comp" "$here/matvec_q8_lop.spv"

# expert_gate_up (issue 13): expert.json, the bundled kernel alone (its seed records);
# expert_glsl.json from its GLSL (for mutate).
compile "$shaders/expert_gate_up.comp" "$here/expert_gate_up.spv"
python3 - "$shaders/expert_gate_up.json" "$here" <<'EOF4'
import json, sys
bundled, here = json.load(open(sys.argv[1])), sys.argv[2]
g = {k: v for k, v in bundled.items() if k != "spirv"}
g["glsl"] = "../../compare/shaders/expert_gate_up.comp"
for name, title, k in (("expert.json", "the bundled expert_gate_up alone", bundled),
                       ("expert_glsl.json", "the bundled expert_gate_up from its GLSL (for mutate)", g)):
    open(f"{here}/{name}", "w").write(json.dumps({"name": title, "version": 1, "kernels": [k]}, indent=1) + "\n")
EOF4

# matvec_q4's other A/B manifests and its diagnostics (parts.py: q4parts.json with
# matvec_q4_{memonly,alu,nox,nosb,arith,skeleton,noloop,store}.comp, wrong results by design; q4small.json; q4xr.json
# on matvec_q4_xr.comp, x in registers and a persistent grid), all from the bundled source and entry.
python3 "$here/parts.py" "$here" "$shaders"
compile "$lost/matvec_q4_xr.comp" "$here/matvec_q4_xr.spv"
for n in memonly alu nox nosb arith skeleton noloop store; do compile "$here/matvec_q4_$n.comp" "$here/matvec_q4_$n.spv"; done
echo "wrote q4parts, q4small and q4xr .json in $here"
