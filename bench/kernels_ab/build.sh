#!/usr/bin/env bash
# A/B timing of the matvec_q kernels in one process: compiles main's kernels before issue 13
# (matvec_q{2,4,8}_before.comp, renamed "matvec_q*_before") and the current bundled ones
# (compare/shaders/matvec_q{2,4,8}.comp) to SPIR-V here, as the build compiles the bundled ones
# (glslc --target-env=vulkan1.2 -O; glslangValidator -V if there is no glslc), and writes these
# manifests next to them:
#   before.json  the before kernels alone: moeoracle compare --ops matvec_q --kernels bench/kernels_ab/before.json
#   q2.json, q4.json, q8.json  a bundled matvec_q alone (its seed records: --kernels
#                bench/kernels_ab/q4.json); q2_glsl.json etc. the same from the GLSL (its mutants:
#                moeoracle mutate --kernels bench/kernels_ab/q4_glsl.json)
#   ab.json      before, current and variant kernels (matvec_q4_word/vec2.comp, matvec_q2_word.comp,
#                matvec_q8_word.comp): every case runs on each of them, in that order, in one process
#   tune_q2q8.json  the bundled matvec_q2 and matvec_q8 at other R, U and WG (`let`s only: tune.py)
# Usage: bash bench/kernels_ab/build.sh   (from anywhere)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shaders=$here/../../compare/shaders
compile() {  # SRC OUT
  if command -v glslc >/dev/null; then
    glslc --target-env=vulkan1.2 -O "$1" -o "$2"
  else
    glslangValidator -V --target-env vulkan1.2 "$1" -o "$2" >/dev/null
  fi
}
before=() current=()
for b in 4 8 2; do
  compile "$here/matvec_q${b}_before.comp" "$here/matvec_q${b}_before.spv"
  compile "$shaders/matvec_q$b.comp" "$here/matvec_q$b.spv"
  before+=("$here/matvec_q${b}_before.json")
  current+=("$shaders/matvec_q$b.json")
done
# Variants that are not bundled: one word and 8 bytes of weights per lane (16 in the bundled ones;
# matvec_q{2,4,8}_word are the bundled kernels of 2026-11-25..27).
for v in q4_word q4_vec2 q2_word q8_word; do
  compile "$here/matvec_$v.comp" "$here/matvec_$v.spv"
  current+=("$here/matvec_$v.json")
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
manifest "matvec_q before issue 13 and current" "${before[@]}" "${current[@]}" >"$here/ab.json"
python3 "$here/tune.py" "$here/tune_q2q8.json" "$shaders/matvec_q2.json" "$shaders/matvec_q8.json"
echo "wrote $here/before.json, $here/q{2,4,8}.json, $here/q{2,4,8}_glsl.json, $here/ab.json and $here/tune_q2q8.json"
