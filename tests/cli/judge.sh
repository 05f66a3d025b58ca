#!/usr/bin/env bash
# judge end to end: a tiny model's own tiers judged module by module (prefill and decode dumps),
# the same dump against another model's weights failing at the first module, and a foreign dump:
# the taps renamed to llama.cpp's tensor names by an independent script (numpy only, the
# safetensors layout) and judged through the shipped map, clean and with one row of one layer's
# output perturbed. Bad inputs exit 2 with the reason.
set -u
bin=$1 py=${2:-python3}  # an interpreter with numpy
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$(dirname "$0")/check_lib.sh"
map="$(dirname "$0")/../../engines/llama-cpp/qwen35moe.map.json"
toks=5,9,300,17,2,44,8,100

check fixture 0 "$bin" fixture --preset tiny --seed 4 --out "$dir/m"
check other 0 "$bin" fixture --preset tiny --seed 5 --out "$dir/other"
check fast 0 "$bin" run --model "$dir/m" --tokens $toks --backend fast --dump "$dir/fast.st" --taps '*'
check judge_fast 0 "$bin" judge "$dir/fast.st" --model "$dir/m" --json "$dir/j.json"
expect_text judge_fast "ok: 64 tapped modules"
check json 0 "$py" -c "import json, sys; j = json.load(open(sys.argv[1])); assert j['first_failed'] is None and len(j['modules']) == 64 and j['tokens'] == 8" "$dir/j.json"
check decode 0 "$bin" run --model "$dir/m" --tokens $toks --backend ref32 --decode --dump "$dir/dec.st" --taps '*'
check judge_decode 0 "$bin" judge "$dir/dec.st" --model "$dir/m"
check wrong_model 1 "$bin" judge "$dir/fast.st" --model "$dir/other"
expect_text wrong_model "FAIL: first failing module model.embed_tokens.out at token 0"

# llama.cpp's names for the taps its graph has (engines/llama-cpp/qwen35moe.map.json), written by
# a script that knows only the file layout; PERTURB="name row": that row times 1.001.
rename() {
  PERTURB="${3:-}" "$py" - "$1" "$2" <<'PY'
import json, os, struct, sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
names = {"model.embed_tokens.out": "inp_embd", "model.norm.out": "result_norm", "logits": "result_output"}
for l in range(4):
    names[f"model.layers.{l}.out"] = f"l_out-{l}"
    names[f"model.layers.{l}.mlp.out"] = f"ffn_out-{l}"
out, blobs, off = {}, [], 0
pert = os.environ.get("PERTURB", "").split()
for ours, theirs in names.items():
    t = head[ours]
    a, b = t["data_offsets"]
    x = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(t["shape"]).copy()
    if pert and pert[0] == theirs:
        x[int(pert[1])] *= np.float32(1.001)
    blob = x.tobytes()
    out[theirs] = {"dtype": "F32", "shape": t["shape"], "data_offsets": [off, off + len(blob)]}
    blobs.append(blob)
    off += len(blob)
h = json.dumps(out).encode()
h += b" " * (-len(h) % 8)
open(dst, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
}
check rename 0 rename "$dir/fast.st" "$dir/llama.st"
check judge_llama 0 "$bin" judge "$dir/llama.st" --model "$dir/m" --map "$map" --tokens $toks
expect_text judge_llama "ok: 11 tapped modules"
check rename_bug 0 rename "$dir/fast.st" "$dir/llama_bug.st" "l_out-2 3"
check judge_llama_bug 1 "$bin" judge "$dir/llama_bug.st" --model "$dir/m" --map "$map" --tokens $toks --html "$dir/r.html"
expect_text judge_llama_bug "FAIL: first failing module model.layers.2.out at token 3"
check html 0 grep -c 'first failing module model.layers.2.out at token 3' "$dir/r.html"
check html_cells 0 grep -c 'class="c f" title="token 3' "$dir/r.html"

check no_tokens 2 "$bin" judge "$dir/llama.st" --model "$dir/m" --map "$map"
expect_text no_tokens "names no tokens"
check bad_rows 2 "$bin" judge "$dir/llama.st" --model "$dir/m" --map "$map" --tokens 5,9,300
expect_text bad_rows "inp_embd"
exit $fail
