#!/usr/bin/env bash
# `mutate --shard I/N` and the merge (`mutate --rescore` of the N reports): three shards of a
# bundled-kernel run put back together give the same report as the run in one process: the same
# mutants in the same order with the same statuses and criteria, the same summary line, the
# bundled claims applied once over the whole. Shards that are not the N of one run are refused.
# Usage: mutate_shard.sh MOEORACLE. Exit 77 (skipped) without lavapipe.
set -u
bin=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/lavapipe.sh"
require_lavapipe "$bin"
export LP_NATIVE_VECTOR_WIDTH=256
args=(--device llvmpipe --kernel residual_add,argmax --shapes remainders --seeds 1 --jobs 2)
"$bin" mutate "${args[@]}" --json "$out/whole.json" >"$out/whole.txt" 2>"$out/whole.err" ||
  { tail -5 "$out/whole.err"; echo "FAIL: the whole run exited $?"; exit 1; }
for i in 0 1 2; do
  "$bin" mutate "${args[@]}" --shard $i/3 --json "$out/s$i.json" >"$out/s$i.txt" 2>"$out/s$i.err" ||
    { tail -5 "$out/s$i.err"; echo "FAIL: shard $i exited $?"; exit 1; }
done
"$bin" mutate --rescore "$out/s2.json,$out/s0.json,$out/s1.json" --json "$out/merged.json" >"$out/merged.txt" 2>&1 ||
  { tail -5 "$out/merged.txt"; echo "FAIL: the merge exited $?"; exit 1; }
fail=0
[ "$(tail -1 "$out/merged.txt")" = "$(tail -1 "$out/whole.txt")" ] ||
  { tail -1 "$out/whole.txt" "$out/merged.txt"; echo "FAIL: the merged summary differs from the whole run's"; fail=1; }
python3 - "$out/whole.json" "$out/merged.json" <<'PY' || fail=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: [(m["kernel"], m["id"], m["status"], m["criterion"], m["why"]) for m in r["mutants"]]
bad = [k for k in ("kernels", "no_cases", "baseline_fails", "baseline_cases", "wrong_claims") if a[k] != b[k]]
if key(a) != key(b) or bad:
    print("FAIL: the merged report differs from the whole run's:", bad or "mutants")
    sys.exit(1)
if not any(m["status"] == "equivalent" for m in b["mutants"]):
    print("FAIL: no bundled claim applied at the merge")
    sys.exit(1)
PY
expect_refused() {  # files... ; message
  local msg=${!#} files=("${@:1:$#-1}")
  if "$bin" mutate --rescore "$(IFS=,; echo "${files[*]}")" >"$out/bad.txt" 2>&1; then
    echo "FAIL: merging ${files[*]} was accepted"; fail=1
  elif ! grep -q "$msg" "$out/bad.txt"; then
    cat "$out/bad.txt"; echo "FAIL: expected '$msg'"; fail=1
  fi
}
expect_refused "$out/s0.json" "$out/s1.json" "2 reports given"
expect_refused "$out/s0.json" "$out/s1.json" "$out/s1.json" "shard 2/3 is missing"
expect_refused "$out/s0.json" "$out/whole.json" "$out/s1.json" "is not a shard's report"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); r["mutants"].pop(); json.dump(r, open(sys.argv[2], "w"))' \
  "$out/s1.json" "$out/s1_short.json"
expect_refused "$out/s0.json" "$out/s1_short.json" "$out/s2.json" "not shard 1/3's share"
[ "$fail" = 0 ] && echo "mutate_shard: 3 shards merged equal the whole run ($(tail -1 "$out/whole.txt"))"
exit $fail
