#!/usr/bin/env bash
# A max whose identity is a NaN (-inf's bit pattern plus one) gives lavapipe's right answer (its
# max returns the other operand) and is undefined elsewhere: the access checks' NaN-operand site
# must kill both such mutants of the bundled softmax on cases whose inputs are finite (killed by
# `bounds`), at subgroup 8. Usage: mutate_nan_identity.sh MOEORACLE. Exit 77 without lavapipe.
set -u
bin=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/lavapipe.sh"
require_lavapipe "$bin"
printf '%s\n' "softmax 26:42 int_plus_one '0xFF800000u' -> '0xFF800001u'" \
  "softmax 48:29 int_plus_one '0xFF800000u' -> '0xFF800001u'" > "$out/list.txt"
LP_NATIVE_VECTOR_WIDTH=256 "$bin" mutate --device llvmpipe --mutants "$out/list.txt" --shapes remainders --seeds 1 \
  --json "$out/m.json" > "$out/m.txt" 2>&1
rc=$?
tail -1 "$out/m.txt"
[ "$rc" = 0 ] || { tail -20 "$out/m.txt"; echo "FAIL: mutate exited $rc"; exit 1; }
python3 - "$out/m.json" <<'PY' || exit 1
import json, sys
ms = json.load(open(sys.argv[1]))["mutants"]
bad = [m["id"] + ": " + m["status"] + " " + m.get("criterion", "") for m in ms
       if m["status"] != "killed" or m.get("criterion") != "bounds"]
if len(ms) != 2 or bad:
    print("FAIL: expected both killed by bounds:", len(ms), "mutants;", bad)
    sys.exit(1)
print("ok: both NaN identities killed by the NaN-operand check")
PY
