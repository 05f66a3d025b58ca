#!/usr/bin/env bash
# `mutate` by source file (docs/mutate.md "Units: one file, every kernel built from it"): two
# kernels built from one file with different specialization constants, and an #include the
# manifest lists in "mutate_includes" (tests/cli/data/mutate_units). Checks that each file is one
# unit judged by both kernels (so the MODE 1 branch's mutants die through add_four), that a
# mutant of a default the manifest always sets is dropped as specialised away, and that with
# add_one alone the MODE 1 mutants survive (the kills came from the other kernel); a unit no case
# runs is reported not judged.
# Usage: mutate_units.sh MOEORACLE. Exit 77 (skipped) without lavapipe.
set -u
bin=$1
data=$(dirname "$0")/data/mutate_units
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/lavapipe.sh"
require_lavapipe "$bin"
export LP_NATIVE_VECTOR_WIDTH=256
fail=0
"$bin" mutate --device llvmpipe --kernels "$data/units.json" --equivalent "$data/equivalent.json" \
  --shapes remainders --seeds 1 --jobs 2 --json "$out/all.json" >"$out/all.txt" 2>"$out/all.err"
rc=$?
tail -1 "$out/all.txt"
[ "$rc" = 0 ] || { tail -20 "$out/all.err"; echo "FAIL: mutate exited $rc"; exit 1; }
for unit in units_add.comp units_terms.glsl; do
  grep -q "^mutate: $unit (2 kernels): " "$out/all.err" || { echo "FAIL: no unit '$unit' of 2 kernels"; fail=1; }
done
"$bin" mutate --device llvmpipe --kernels "$data/units.json" --kernel add_one \
  --shapes remainders --seeds 1 --jobs 2 --json "$out/one.json" >"$out/one.txt" 2>"$out/one.err"
rc=$?
[ "$rc" = 0 ] || { tail -20 "$out/one.err"; echo "FAIL: mutate --kernel add_one exited $rc"; exit 1; }
python3 - "$out" <<'PY' || fail=1
import json, sys
out = sys.argv[1]
bad = []
a = json.load(open(out + "/all.json"))
if sorted(a["kernels"]) != ["all", "units_add.comp", "units_terms.glsl"]:
    bad.append("units: expected units_add.comp and units_terms.glsl, found %s" % sorted(a["kernels"]))
s = a["kernels"]["all"]
if s["survived"] != 0 or s["equivalent"] != 2 or a["wrong_claims"]:
    bad.append("both kernels together: %d survived, %d equivalent, wrong claims %s (expected 0, 2, none)"
               % (s["survived"], s["equivalent"], a["wrong_claims"]))
spec = [m for m in a["mutants"] if m["id"].startswith("7:") and "specialised away" in m["evidence"]]
if len(spec) != 1 or spec[0]["status"] != "identical_spirv":
    bad.append("the MODE default (line 7): expected one mutant dropped as specialised away, found %s" % spec)
# add_one alone never runs MODE 1: the mutants of that branch (lines 15-19) survive there.
one = json.load(open(out + "/one.json"))
branch = [m for m in one["mutants"] if 15 <= m["line"] <= 19 and m["status"] == "survived"]
if not branch:
    bad.append("add_one alone: no MODE 1 mutant survived, so the kills above need not have come from add_four")
if sorted(one["kernels"]) != ["add_one", "all", "units_terms.glsl"]:
    bad.append("add_one alone: expected add_one (its own file) and units_terms.glsl, found %s" % sorted(one["kernels"]))
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
# --rescore: the first run's results scored again without claims, then with them; nothing runs.
"$bin" mutate --rescore "$out/all.json" --json "$out/bare.json" >"$out/bare.txt" 2>&1 || { echo "FAIL: --rescore exited $?"; fail=1; }
"$bin" mutate --rescore "$out/bare.json" --equivalent "$data/equivalent.json" >"$out/again.txt" 2>&1 || { echo "FAIL: --rescore with claims exited $?"; fail=1; }
grep -q ' 2 survived, 0 equivalent' "$out/bare.txt" || { tail -2 "$out/bare.txt"; echo "FAIL: --rescore without claims: expected the 2 argued mutants back as survivors"; fail=1; }
[ "$(tail -1 "$out/again.txt")" = "$(tail -1 "$out/all.txt")" ] || { tail -1 "$out/again.txt"; echo "FAIL: --rescore with the claims does not give the run's own summary"; fail=1; }
# A unit no case runs (limits no case meets): not judged, its mutants not run, and a gate run
# (--min-kill-rate) fails instead of passing on nothing.
"$bin" mutate --device llvmpipe --kernels "$data/no_case.json" --shapes remainders --seeds 1 --jobs 2 \
  --max-per-kernel 4 --min-kill-rate 0.5 --json "$out/none.json" >"$out/none.txt" 2>"$out/none.err"
rc=$?
[ "$rc" = 1 ] || { tail -5 "$out/none.txt" "$out/none.err"; echo "FAIL: a unit without cases under --min-kill-rate exited $rc, expected 1"; fail=1; }
grep -q '^NOT JUDGED add_one: ' "$out/none.txt" || { echo "FAIL: no NOT JUDGED line for add_one"; fail=1; }
python3 - "$out/none.json" <<'PY' || fail=1
import json, sys
n = json.load(open(sys.argv[1]))
s = n["kernels"]["add_one"]
if n.get("no_cases") != ["add_one"] or s["survived"] or s["killed"] or s["not_run"] != 4:
    print("FAIL: no case: expected no_cases [add_one] and 4 mutants not run, found", n.get("no_cases"), s)
    sys.exit(1)
PY
[ $fail = 0 ] && echo "ok: two units of two kernels each, every mutant killed or argued, the specialised default dropped"
exit $fail
