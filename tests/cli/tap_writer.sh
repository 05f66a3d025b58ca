#!/usr/bin/env bash
# The engine-side tap writer (include/moeoracle/tap_writer.h) end to end: a C engine (engine_demo)
# replays an oracle run token by token and dumps it with the writer, in the oracle's names and in
# its own names and dtypes; `moeoracle diff` (with --map for the engine's names) must line every
# tap up, name a perturbed tap as the first divergent one, and pass without it. Then the error
# paths: no file after a failed call, in an unwritable directory, or after a crash.
#   tap_writer.sh MOEORACLE ENGINE_DEMO ENGINE_DEMO_STDIO CXX_SMOKE ENGINE_MAP
set -u
bin=$1 demo=$2 demo_stdio=$3 cxx=$4 map=$5
dir=$(mktemp -d)
trap 'chmod -R u+w "$dir"; rm -rf "$dir"' EXIT
source "$(dirname "$0")/check_lib.sh"
expect_line() {  # expect_line NAME LINE : the last command's output has exactly this line
  if ! grep -qxF -- "$2" "$dir/out.txt"; then echo "FAIL $1: no line '$2'"; sed 's/^/    /' "$dir/out.txt" | tail -8; fail=1; fi
}
expect_only() {  # expect_only NAME DIR FILES... : DIR holds exactly FILES (no temporary files left)
  local name=$1 d=$2
  shift 2
  local have want
  have=$(ls -A "$d" | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
  if [ "$have" != "$want" ]; then echo "FAIL $name: $d holds '$have', expected '$want'"; fail=1; fi
}

# The oracle's run, and its tensors listed for the engine (name dtype rows cols byte offset).
check fixture 0 "$bin" fixture --preset tiny --format moeflux --seed 3 --out "$dir/m"
check run_truth 0 "$bin" run --model "$dir/m" --tokens 5,9,300,17,2,44,8,100 --backend ref64 --dump "$dir/ref.st"
python3 - "$dir/ref.st" >"$dir/manifest.txt" <<'PY' || fail=1
import json, struct, sys
f = open(sys.argv[1], 'rb'); n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n))
h.pop('__metadata__', None)
for name, e in sorted(h.items(), key=lambda kv: kv[1]['data_offsets'][0]):
    assert e['dtype'] in ('F32', 'I32') and len(e['shape']) == 2, name
    print(name, e['dtype'], e['shape'][0], e['shape'][1], 8 + n + e['data_offsets'][0])
PY
ntaps=$(wc -l <"$dir/manifest.txt")
mkdir "$dir/out"

# Every tap under its own name, f32/i32, row by row (one whole): bit-identical to the oracle's.
check own_names 0 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/out/own.st"
check own_inspect 0 "$bin" inspect "$dir/out/own.st"
expect_line own_inspect "# backend: engine_demo"
expect_line own_inspect "# tokens: 5,9,300,17,2,44,8,100"
check own_diff_exact 0 "$bin" diff "$dir/ref.st" "$dir/out/own.st" --threshold 0
expect_line own_diff_exact "$ntaps passed, 0 failed"
# The C99-stdio build of the writer (no POSIX calls) writes the same bytes.
check stdio_build 0 "$demo_stdio" "$dir/manifest.txt" "$dir/ref.st" "$dir/out/stdio.st"
cmp -s "$dir/out/own.st" "$dir/out/stdio.st" || { echo "FAIL stdio_build: its file differs from the POSIX build's"; fail=1; }

# The engine's own names, f16 and bf16 rows, logits one tensor per token, lined up by the map.
# Threshold 5e-3: bf16 rounding (round to nearest, 8 significant bits) moves a value by at most
# 2^-8 = 3.9e-3 of itself, so max|A-B| / max|A| stays below it; f16's 2^-11 far below.
check engine_names 0 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/out/engine.st" --names engine
check engine_diff 0 "$bin" diff "$dir/ref.st" "$dir/out/engine.st" --map "$map" --threshold 5e-3
expect_text engine_diff "model.layers.2.mlp.out <- blk.2.ffn_out"
expect_text engine_diff "model.layers.0.input_layernorm.out <- blk.0.attn_norm"
expect_text engine_diff "logits <- t7.result_output"
expect_line engine_diff "27 passed, 0 failed"
check engine_inspect 0 "$bin" inspect "$dir/out/engine.st"
expect_text engine_inspect "blk.3.ffn_out                                            BF16  [8, 256]"
expect_text engine_inspect "model.layers.3.out                                       F16   [8, 256]"

# An engine bug at token 5 of layer 2's MoE output (x1.25): the first divergent tap, in the
# oracle's forward order, is that one, everything before it passes.
check perturbed 0 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/out/bug.st" --names engine --perturb model.layers.2.mlp.out:5
check perturbed_diff 1 "$bin" diff "$dir/ref.st" "$dir/out/bug.st" --map "$map" --threshold 5e-3
expect_line perturbed_diff "first tap over threshold: model.layers.2.mlp.out <- blk.2.ffn_out"
expect_line perturbed_diff "26 passed, 1 failed"
check perturbed_own 0 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/out/bug_own.st" --perturb model.layers.2.mlp.out:5
check perturbed_own_diff 1 "$bin" diff "$dir/ref.st" "$dir/out/bug_own.st" --threshold 0
expect_line perturbed_own_diff "first tap over threshold: model.layers.2.mlp.out"
expect_only no_temporaries "$dir/out" own.st stdio.st engine.st bug.st bug_own.st

# A missing directory: the error names the file and the cause, at open, and nothing appears.
check missing_dir 1 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/nodir/x.st"
expect_text missing_dir "$dir/nodir/x.st: cannot create a temporary file in its directory"
expect_text missing_dir "No such file or directory"
[ -e "$dir/nodir" ] && { echo "FAIL missing_dir: $dir/nodir appeared"; fail=1; }
# A read-only directory (root writes anywhere, so only as another user).
if [ "$(id -u)" != 0 ]; then
  mkdir "$dir/ro" && chmod 555 "$dir/ro"
  check readonly_dir 1 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/ro/x.st"
  expect_text readonly_dir "Permission denied"
  expect_only readonly_dir_empty "$dir/ro"
fi

# A row one value short at token 3: the error names the tap and both lengths; the file already
# at the target (an earlier good dump) is left as it was, and nothing else appears.
mkdir "$dir/badrow" && cp "$dir/out/own.st" "$dir/badrow/x.st"
check bad_row 1 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/badrow/x.st" --bad-row
expect_text bad_row "x.st: moe_tap_append_row: tap 'model.layers.1.out': a row of 255 values, expected 256"
cmp -s "$dir/out/own.st" "$dir/badrow/x.st" || { echo "FAIL bad_row: the earlier file was changed"; fail=1; }
expect_only bad_row_no_temporaries "$dir/badrow" x.st

# A crash after every tap was added, before close: no file, no spool left behind.
mkdir "$dir/crash"
# (The braces' redirection keeps bash's "Aborted" notice out of the log.)
{ "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/crash/x.st" --abort-before-close >/dev/null 2>&1; rc=$?; } 2>/dev/null
[ $rc -ge 128 ] && echo "ok   crash (signal $((rc - 128)))" || { echo "FAIL crash: exit $rc, expected death by SIGABRT"; fail=1; }
expect_only crash_leaves_nothing "$dir/crash"

# A failure at close itself (the target is a directory): the temporary file is removed.
mkdir -p "$dir/close/adir"
check close_fails 1 "$demo" "$dir/manifest.txt" "$dir/ref.st" "$dir/close/adir"
expect_text close_fails "onto it failed"
expect_only close_fails_cleanup "$dir/close" adir

# The header as C++17: status codes, sticky failures, shapes beyond 2-d, escaped metadata.
mkdir "$dir/cxx"
check cxx_smoke 0 "$cxx" "$dir/cxx"
check cxx_inspect 0 "$bin" inspect "$dir/cxx/cxx.safetensors"
expect_line cxx_inspect '# backend: cxx "smoke" \ café'
expect_text cxx_inspect "cube                                                     BF16  [2, 3, 2]"
expect_only cxx_files "$dir/cxx" cxx.safetensors

[ $fail = 0 ] && echo "tap writer: all passed"
exit $fail
