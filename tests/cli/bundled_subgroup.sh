#!/usr/bin/env bash
# The bundled kernels on lavapipe at one subgroup size: every remainder case must pass (exit 0),
# and the run's header must name the expected size, so that a lavapipe ignoring the width that
# CTest sets (LP_NATIVE_VECTOR_WIDTH 128 -> 4, 256 -> 8, 512 -> 16) cannot pass at its default.
# Usage: bundled_subgroup.sh MOEORACLE SUBGROUP_SIZE. Exit 77 (skipped) without lavapipe.
set -u
bin=$1 want=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
. "$(dirname "$0")/lavapipe.sh"
require_lavapipe "$bin"
"$bin" compare --device llvmpipe --shapes remainders --seeds 2 >"$out" 2>&1
rc=$?
head -1 "$out"
tail -1 "$out"
if ! head -1 "$out" | grep -q "^device [0-9]*: llvmpipe.*, subgroup sizes $want; kernels: bundled$"; then
  echo "FAIL: the header does not name subgroup size $want (LP_NATIVE_VECTOR_WIDTH=${LP_NATIVE_VECTOR_WIDTH:-unset})"
  exit 1
fi
if [ "$rc" != 0 ]; then
  grep -A2 '^FAIL' "$out" | head -40
  echo "FAIL: compare exited $rc"
  exit 1
fi
echo "ok: bundled kernels at subgroup size $want"
