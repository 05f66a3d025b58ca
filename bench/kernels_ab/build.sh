#!/usr/bin/env bash
# A/B timing of the matvec_q kernels in one process: compiles main's kernels before issue 13
# (matvec_q{2,4,8}_before.comp, renamed "matvec_q*_before") and the current bundled ones
# (compare/shaders/matvec_q{2,4,8}.comp) to SPIR-V here, as the build compiles the bundled ones
# (glslc --target-env=vulkan1.2 -O; glslangValidator -V if there is no glslc), and writes two
# manifests next to them:
#   before.json  the before kernels alone: moeoracle compare --ops matvec_q --kernels bench/kernels_ab/before.json
#   q4.json      the bundled matvec_q4 alone (its seed records: --kernels bench/kernels_ab/q4.json)
#   ab.json      before, current and variant kernels (matvec_q4_word/vec2.comp): every case runs on
#                each of them, in that order, in one process
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
# Variants that are not bundled: one word and 8 bytes of weights per lane (16 in the bundled one;
# matvec_q4_word is the bundled kernel of 2026-11-25..27).
for v in word vec2; do
  compile "$here/matvec_q4_$v.comp" "$here/matvec_q4_$v.spv"
  current+=("$here/matvec_q4_$v.json")
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
manifest "the bundled matvec_q4 alone" "$shaders/matvec_q4.json" >"$here/q4.json"
manifest "matvec_q before issue 13 and current" "${before[@]}" "${current[@]}" >"$here/ab.json"
echo "wrote $here/before.json, $here/q4.json and $here/ab.json"
