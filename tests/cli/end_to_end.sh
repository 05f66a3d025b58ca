#!/usr/bin/env bash
# The moeoracle executable end to end: fixture -> run -> dump -> inspect -> diff, snapshots across
# processes, and the exit codes (0 ok, 1 a comparison failed, 2 bad input) with their messages.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() {  # check NAME WANT_RC COMMAND... : runs COMMAND, expects exit code WANT_RC
  local name=$1 want=$2
  shift 2
  "$@" >"$dir/out.txt" 2>&1
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/    /' "$dir/out.txt" | tail -5; fail=1
  else
    echo "ok   $name"
  fi
}
expect_text() {  # expect_text NAME TEXT : the last command's output contains TEXT
  if ! grep -qF -- "$2" "$dir/out.txt"; then echo "FAIL $1: output lacks '$2'"; fail=1; fi
}

check fixture 0 "$bin" fixture --preset tiny --format moeflux --seed 3 --out "$dir/m"
toks=5,9,300,17,2,44,8,100
check run_fast 0 "$bin" run --model "$dir/m" --tokens $toks --backend fast --dump "$dir/fast.st"
expect_text run_fast "wrote"
check run_truth 0 "$bin" run --model "$dir/m" --tokens $toks --backend ref64 --dump "$dir/ref.st" --taps 'logits,model.layers.*.out'
check inspect 0 "$bin" inspect "$dir/ref.st"
expect_text inspect "logits"
check diff_ok 0 "$bin" diff "$dir/ref.st" "$dir/fast.st" --threshold 1e-4
check diff_strict_fails 1 "$bin" diff "$dir/ref.st" "$dir/fast.st" --threshold 0
expect_text diff_strict_fails "first tap over threshold"

# Snapshot in one process, continue in another: identical logits to one uninterrupted run.
check run_all 0 "$bin" run --model "$dir/m" --tokens $toks --backend ref32 --decode --dump "$dir/all.st" --taps logits
check run_first 0 "$bin" run --model "$dir/m" --tokens 5,9,300 --backend ref32 --decode --snapshot-out "$dir/s.mflx"
check run_rest 0 "$bin" run --model "$dir/m" --tokens 17,2,44,8,100 --backend ref32 --decode --snapshot-in "$dir/s.mflx" --dump "$dir/rest.st" --taps logits
python3 - "$dir" <<'PY' || fail=1
import json, struct, sys
def load(p):
    f = open(p, 'rb'); n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n)); base = 8 + n
    e = h['logits']; f.seek(base + e['data_offsets'][0]); return f.read(e['data_offsets'][1] - e['data_offsets'][0]), e['shape']
d = sys.argv[1]
(a, sa), (b, sb) = load(d + '/all.st'), load(d + '/rest.st')
row = sa[1] * 4
if a[3 * row:] != b:
    print('FAIL snapshot: continued logits differ from the uninterrupted run'); sys.exit(1)
print('ok   snapshot continue is bit-identical')
PY

# Bad input: exit 2 and a message naming what is wrong.
check bad_dir 2 "$bin" run --model "$dir/nope" --tokens 1
expect_text bad_dir "not a directory"
check bad_token 2 "$bin" run --model "$dir/m" --tokens 1,512
expect_text bad_token "512"
check bad_token_text 2 "$bin" run --model "$dir/m" --tokens 1,x
expect_text bad_token_text "token 'x'"
printf 'garbage' > "$dir/bad.mflx"
check bad_snapshot 2 "$bin" run --model "$dir/m" --tokens 1 --snapshot-in "$dir/bad.mflx"
expect_text bad_snapshot "bad.mflx"
check bad_backend 2 "$bin" run --model "$dir/m" --tokens 1 --backend gpu
check bad_dump 2 "$bin" inspect "$dir/bad.mflx"
expect_text bad_dump "bad.mflx"
[ $fail = 0 ] && echo "cli end to end: all passed"
exit $fail
