#!/usr/bin/env bash
# The moeoracle executable end to end: fixture -> run -> dump -> inspect -> diff, snapshots across
# processes, and the exit codes (0 ok, 1 a comparison failed, 2 bad input) with their messages.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$(dirname "$0")/check_lib.sh"

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
# A GGUF file (an independent writer's): its metadata, and the exact values of an f32 and a q8_0 tensor.
python3 "$(dirname "$0")/../oracle/data/write_gguf.py" "$dir/m.gguf"
check inspect_gguf 0 "$bin" inspect "$dir/m.gguf"
expect_text inspect_gguf "GGUF version 3, 5 metadata entries, 2 tensors, alignment 64"
expect_text inspect_gguf "qwen3moe.expert_count: u32 8"
expect_text inspect_gguf "blk.0.attn_q.weight                                      q8_0  [32, 2]               -15.5           21"
head -c 300 "$dir/m.gguf" > "$dir/cut.gguf"
check inspect_gguf_cut 2 "$bin" inspect "$dir/cut.gguf"
expect_text inspect_gguf_cut "cut.gguf"
# A GGUF model: the same fixture written as GGUF (q4_1 holds its 4-bit weights exactly) runs to
# the MLX model's truth dump within 1e-5 (bit for bit until two of layer 2's A_log values take
# llama.cpp's lossy ssm_a = -exp(A_log) form); inspect lists its llama.cpp tensors.
check fixture_gguf 0 "$bin" fixture --preset tiny --format gguf --seed 3 --out "$dir/m.tiny.gguf"
check fixture_mlx 0 "$bin" fixture --preset tiny --format mlx --seed 3 --out "$dir/mlx3"
mkdir -p "$dir/again"
check fixture_gguf_again 0 "$bin" fixture --preset tiny --format gguf --seed 3 --out "$dir/again/other.gguf"
check fixture_gguf_same_bytes 0 cmp "$dir/m.tiny.gguf" "$dir/again/other.gguf"
check inspect_gguf_model 0 "$bin" inspect "$dir/m.tiny.gguf"
expect_text inspect_gguf_model 'general.architecture: string "qwen35moe"'
expect_text inspect_gguf_model "blk.0.ffn_gate_exps.weight"
check run_gguf 0 "$bin" run --model "$dir/m.tiny.gguf" --tokens $toks --backend ref64 --dump "$dir/gguf.st"
check run_mlx3 0 "$bin" run --model "$dir/mlx3" --tokens $toks --backend ref64 --dump "$dir/mlx3.st"
check diff_gguf 0 "$bin" diff "$dir/mlx3.st" "$dir/gguf.st" --threshold 1e-5
# Drift of the fast tier's next-token distributions from the truth's (tokens from the dump's metadata).
check drift_ok 0 "$bin" drift "$dir/ref.st" "$dir/fast.st" --max-kld 1e-6
expect_text drift_ok "Same top p: 100.0000"
expect_text drift_ok "(7 positions with a next token)"
check drift_strict_fails 1 "$bin" drift "$dir/ref.st" "$dir/fast.st" --max-kld 0
expect_text drift_strict_fails "FAIL: mean KLD above 0"
check drift_no_tap 2 "$bin" drift "$dir/ref.st" "$dir/fast.st" --tap model.norm.out
expect_text drift_no_tap "has no tensor 'model.norm.out'"
# The worker entry is compare's protocol: a malformed request is refused with the reason, exit 2.
check worker_bad_json 2 "$bin" compare-worker '{"options":'
expect_text worker_bad_json "compare worker: malformed request"
check worker_missing_key 2 "$bin" compare-worker '{"options": {}}'
expect_text worker_missing_key "compare worker: malformed request"
check worker_no_request 2 "$bin" compare-worker
expect_text worker_no_request "expected \`compare-worker <request JSON>\`, got 0 arguments"

# Another engine's dump, lined up by a mapping file: llama.cpp-style names, the layer outputs as
# f16, the logits one tensor per token (a decode loop's dumps).
python3 - "$dir" <<'PY' || fail=1
import json, struct, sys
d = sys.argv[1]
f = open(d + '/ref.st', 'rb'); n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n)); base = 8 + n
def read(name):
    e = h[name]; f.seek(base + e['data_offsets'][0]); raw = f.read(e['data_offsets'][1] - e['data_offsets'][0])
    return list(struct.unpack('<%df' % (len(raw) // 4), raw)), e['shape']
out = {}
for name in h:
    if name.startswith('model.layers.') and name.endswith('.out') and name.count('.') == 3:
        v, shape = read(name); out['blk.%s.ffn_out' % name.split('.')[2]] = ('F16', shape, struct.pack('<%de' % len(v), *v))
v, shape = read('logits')
for t in range(shape[0]):
    row = v[t * shape[1]:(t + 1) * shape[1]]
    out['t%d.result_output' % t] = ('F32', [shape[1]], struct.pack('<%df' % len(row), *row))
def write(path, tensors):
    hdr, blobs, off = {}, [], 0
    for k, (dt, shape, raw) in tensors.items():
        hdr[k] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + len(raw)]}; blobs.append(raw); off += len(raw)
    j = json.dumps(hdr).encode(); j += b' ' * (-len(j) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(j)) + j + b''.join(blobs))
write(d + '/engine.st', out)
# The same dump with layer 2's output 1% off.
name = 'blk.2.ffn_out'; dt, shape, raw = out[name]; vals = struct.unpack('<%de' % (len(raw) // 2), raw)
out[name] = (dt, shape, struct.pack('<%de' % len(vals), *[x * 1.01 for x in vals]))
write(d + '/engine_bad.st', out)
json.dump({'version': 1, 'map': {'blk.{layer}.ffn_out': 'model.layers.{layer}.out',
                                  't{token}.result_output': 'logits'}}, open(d + '/map.json', 'w'))
PY
# f16 rounding is 2^-11 relative: a 2e-3 threshold passes it, the 1% error fails.
check diff_map_ok 0 "$bin" diff "$dir/ref.st" "$dir/engine.st" --map "$dir/map.json" --threshold 2e-3
expect_text diff_map_ok "model.layers.0.out <- blk.0.ffn_out"
expect_text diff_map_ok "logits <- t7.result_output"
# drift through the same map: the engine's per-token logits rows put together (its copies of ours).
check drift_map 0 "$bin" drift "$dir/ref.st" "$dir/engine.st" --map "$dir/map.json" --max-kld 0
expect_text drift_map "Mean    KLD:            0"
check diff_map_bad 1 "$bin" diff "$dir/ref.st" "$dir/engine_bad.st" --map "$dir/map.json" --threshold 2e-3
expect_text diff_map_bad "first tap over threshold: model.layers.2.out <- blk.2.ffn_out"
printf '{"version": 1, "map": {"blk.{layer}.x": "model.layers.{expert}.out"}}' > "$dir/badmap.json"
check diff_map_invalid 2 "$bin" diff "$dir/ref.st" "$dir/engine.st" --map "$dir/badmap.json"
expect_text diff_map_invalid "placeholder {expert} is not in the key"

# Nothing lined up is not a pass: a map that matches none of B's names is an error.
printf '{"version": 1, "map": {"nothing.{layer}": "model.layers.{layer}.out"}}' > "$dir/nomatch.json"
check diff_nothing_compared 2 "$bin" diff "$dir/ref.st" "$dir/engine.st" --map "$dir/nomatch.json"
expect_text diff_nothing_compared "lines up with a tap of"
# A token number no dump can have is a clear error, not a crash.
printf '{"version": 1, "map": {"t{token}.result_output": "logits"}}' > "$dir/tokmap.json"
python3 - "$dir" <<'PY' || fail=1
import json, struct, sys
d = sys.argv[1]
j = json.dumps({'t99999999999999999999.result_output': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0, 4]}}).encode()
j += b' ' * (-len(j) % 8)
open(d + '/bigtok.st', 'wb').write(struct.pack('<Q', len(j)) + j + struct.pack('<f', 1.0))
PY
check diff_token_range 2 "$bin" diff "$dir/ref.st" "$dir/bigtok.st" --map "$dir/tokmap.json"
expect_text diff_token_range "is not a plausible token index"
# Routing taps compare each token's experts as a set: the slots of idx and weight permuted
# together still pass; a weight moved to another expert fails.
python3 - "$dir" <<'PY' || fail=1
import json, struct, sys
d = sys.argv[1]
f = open(d + '/fast.st', 'rb'); n = struct.unpack('<Q', f.read(8))[0]; hj = f.read(n); h = json.loads(hj); data = f.read()
def get(name):
    e = h[name]; raw = data[e['data_offsets'][0]:e['data_offsets'][1]]
    return list(struct.unpack('<%d%s' % (len(raw) // 4, 'i' if e['dtype'] == 'I32' else 'f'), raw)), e
L = 'model.layers.0.mlp.experts.'
idx, ei = get(L + 'idx'); w, ew = get(L + 'weight'); k = ei['shape'][1]
def rev(v):  # reverse every token's slots
    return [x for r in range(0, len(v), k) for x in reversed(v[r:r + k])]
def patch(vals_idx, vals_w, path):
    out = bytearray(data)
    out[ei['data_offsets'][0]:ei['data_offsets'][1]] = struct.pack('<%di' % len(vals_idx), *vals_idx)
    out[ew['data_offsets'][0]:ew['data_offsets'][1]] = struct.pack('<%df' % len(vals_w), *vals_w)
    open(path, 'wb').write(struct.pack('<Q', n) + hj + bytes(out))
patch(rev(idx), rev(w), d + '/slots.st')
patch(idx, rev(w), d + '/slots_bad.st')
PY
check diff_slot_order 0 "$bin" diff "$dir/fast.st" "$dir/slots.st" --threshold 0
check diff_slot_mismatch 1 "$bin" diff "$dir/fast.st" "$dir/slots_bad.st" --threshold 0
expect_text diff_slot_mismatch "first tap over threshold: model.layers.0.mlp.experts.weight"

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

# The model-level differential on the default Vulkan device (lavapipe in CI).
check bisect_ok 0 "$bin" bisect --model "$dir/m" --tokens 5,9,300 --prefill 2 --html "$dir/r.html" --json "$dir/r.json"
expect_text bisect_ok "0 failed"
[ -s "$dir/r.html" ] && grep -q 'id="data"' "$dir/r.html" || { echo "FAIL bisect_html: no report"; fail=1; }
check bisect_bad_mode 2 "$bin" bisect --model "$dir/m" --tokens 5 --mode sideways
check bisect_bad_token 2 "$bin" bisect --model "$dir/m" --tokens 5,99999
expect_text bisect_bad_token "99999"
check case_missing 2 "$bin" compare --case "$dir/none.safetensors"
expect_text case_missing "none.safetensors"
check case_not_a_case 2 "$bin" compare --case "$dir/ref.st"
expect_text case_not_a_case "not a moeoracle case file"
# --perf: a perf line per (op, kernel, shape) against the measured copy bandwidth; a multi-step
# op (delta_net) and one-step ops (rmsnorm, timed by a burst) both get one.
# One case each: --perf times every case it runs (all remainders took 28 s on 2 cores).
check perf 0 "$bin" compare --ops rmsnorm --shapes 'remainder dim 33' --seeds 1 --perf
expect_text perf "measured by a copy kernel"
expect_text perf "  rmsnorm  rmsnorm  [remainder dim 33]"
expect_text perf "% of copy"
expect_text perf "% of same-size"
expect_text perf "  stream "
expect_text perf "\"stream\": the case as a decode runs it"
check perf_steps 0 "$bin" compare --ops delta_net --shapes 'remainder dk 520, dv 259, r 2, 3 steps' --seeds 1 --perf
expect_text perf_steps "  delta_net  delta_net  [remainder dk 520, dv 259, r 2, 3 steps]"
expect_text perf_steps "% of copy)"
# The stream figure in the JSON report, through an isolated worker; MOE_PERF_STREAM=0 leaves it out.
check perf_json 0 "$bin" compare --ops rmsnorm --shapes 'remainder dim 33' --seeds 1 --perf --json "$dir/perf.json"
check perf_json_stream 0 python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['cases'][0]['timing']
assert t['stream_median_ms'] > 0 and t['stream_min_ms'] <= t['stream_median_ms'] <= t['stream_max_ms'], t
assert 1 <= t['stream_copies'] <= 64 and isinstance(t['stream_cold'], bool), t" "$dir/perf.json"
check perf_no_stream 0 env MOE_PERF_STREAM=0 "$bin" compare --ops rmsnorm --shapes 'remainder dim 33' --seeds 1 --perf
expect_text perf_no_stream "% of same-size"
expect_no_text perf_no_stream "stream"
# A cache flush larger than a storage buffer may be (lavapipe: 128 MiB), as a host with a 480 MiB
# L3 asks for: the reader binds and reads the part it can (it failed every case once).
check perf_big_flush 0 env MOE_PERF_FLUSH_MB=200 "$bin" compare --ops rmsnorm --shapes 'remainder dim 33' --seeds 1 --perf
expect_text perf_big_flush "% of same-size"
# A case with a flop count is also set against the device's measured FMA peak.
check perf_flops 0 "$bin" compare --ops matmul_q --shapes 'remainder rows 33 T 64' --seeds 1 --perf --no-isolate
expect_text perf_flops "measured by a kernel of fma chains"
expect_text perf_flops "% of FMA peak)"
# The timing shapes exist only for the large matvecs and matmuls; other ops have none.
check perf_shapes_none 0 "$bin" compare --ops rmsnorm --shapes perf --no-isolate
expect_text perf_shapes_none "0 passed, 0 failed"
# A timing shape's label (as a failure's reproduce line names it) runs that case alone, with the
# seed it has in `--shapes perf`.
check perf_label 0 "$bin" compare --ops matvec_q --shapes 'A17B o_proj 4096x8192 4-bit' --seeds 1 --no-isolate
expect_text perf_label "[A17B o_proj 4096x8192 4-bit]  seed=1"
expect_text perf_label "1 passed, 0 failed"
# MOE_TRACE_TIMES=1: the seed's case building and each case's phases on stderr.
check trace_times 0 env MOE_TRACE_TIMES=1 "$bin" compare --ops rmsnorm --shapes remainders --seeds 1 --no-isolate
expect_text trace_times "trace: rmsnorm seed 1: building its cases: "
expect_text trace_times "(layout "
expect_text trace_times ", run "
check bad_shapes 2 "$bin" compare --ops rmsnorm --shapes huge
expect_text bad_shapes "is neither a set (remainders, real, all, perf) nor the label"

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
