#!/usr/bin/env bash
# CI's guard on the gate's strength: a fixed sample of mutants of the bundled kernels (the same
# sample every run: --max-per-kernel with a fixed --sample-seed) on lavapipe at subgroup size 8,
# remainder shapes, one seed. The kill rate of the sample must not fall below the rate recorded
# for it (records/compare-runs.md, "Mutation smoke"), less one mutant of slack (a mutant whose kill
# depends on thread timing, e.g. a dropped barrier, may go either way); the unmutated kernels must
# pass (mutate exits 2 otherwise), and no equivalence claim built into the binary may be killed.
# Usage: mutate_smoke.sh MOEORACLE. Exit 77 (skipped) without lavapipe.
set -u
bin=$1
# The recorded sample: kernels, size, and its kill rate (killed / non-equivalent) on lavapipe.
kernels=rmsnorm,residual_add,matvec_q4,matmul_q4,rope,router_topk,argmax,embedding,conv1d_step,expert_buckets,attention_softmax,moe_combine
per_kernel=10
recorded_killed=${MUTATE_SMOKE_KILLED:-111}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/lavapipe.sh"
require_lavapipe "$bin"
export LP_NATIVE_VECTOR_WIDTH=256
"$bin" mutate --device llvmpipe --kernel "$kernels" --shapes remainders --seeds 1 \
  --max-per-kernel $per_kernel --sample-seed 1 --jobs 2 >"$out/m.txt" 2>"$out/m.err"
rc=$?
tail -3 "$out/m.txt"
if [ "$rc" != 0 ]; then
  tail -20 "$out/m.err"
  echo "FAIL: mutate exited $rc"
  exit 1
fi
# The console's last line: "N mutants: K killed (T by timeout), S survived, E equivalent (argued), ..."
summary=$(tail -1 "$out/m.txt")
killed=$(echo "$summary" | sed -n 's/^[0-9]* mutants: \([0-9]*\) killed.*/\1/p')
if [ -z "$killed" ]; then
  echo "FAIL: no summary line in the mutate output"
  exit 1
fi
if grep -q '^CLAIM DID NOT HOLD' "$out/m.txt"; then
  grep '^CLAIM DID NOT HOLD' "$out/m.txt"
  echo "FAIL: equivalence claims contradicted by kills"
  exit 1
fi
if [ "$killed" -lt $((recorded_killed - 1)) ]; then
  grep '^SURVIVED' "$out/m.txt"
  echo "FAIL: $killed killed, recorded $recorded_killed (slack 1): the gate got weaker"
  exit 1
fi
echo "ok: $killed killed (recorded $recorded_killed)"
# Mutants only the poison for uninitialised locals, the exact-tie rule and the access checks kill:
# each must die.
known=$(dirname "$0")/data/mutate_known_kills.txt
"$bin" mutate --device llvmpipe --mutants "$known" --shapes remainders --seeds 1 --jobs 2 >"$out/k.txt" 2>"$out/k.err"
want=$(grep -c '^[a-z]' "$known")
tail -1 "$out/k.txt"
if ! tail -1 "$out/k.txt" | grep -q "^$want mutants: $want killed"; then
  grep -E '^(SURVIVED|NOT FOUND)' "$out/k.txt"; tail -5 "$out/k.err"
  echo "FAIL: of $want known kills (uninitialised locals, exact ties, access checks) some were not killed"
  exit 1
fi
echo "ok: the $want known kills"
