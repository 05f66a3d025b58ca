#!/usr/bin/env python3
"""Resident memory of a `moeoracle run` against what the run must touch (docs/resources.md).

Usage: bench/rss.py MODEL_DIR DUMP.safetensors -- COMMAND...

Runs COMMAND (a `moeoracle run --model MODEL_DIR ... --dump DUMP --taps '*experts.idx'`),
samples /proc/PID/status every 20 ms (VmRSS, RssAnon, RssFile) and reports the peaks with the
kernel's own high-water mark (VmHWM). Then reads the model's safetensors headers (MLX directory)
and the dump's expert ids, and prints the bytes the run has to touch: every non-expert tensor
plus, per MoE layer, the distinct experts the tokens routed to (a routed expert's gate, up and
down rows with their scales and biases: its share of the stacked switch_mlp tensors); of the
embedding table only the rows of the distinct tokens (COMMAND's --tokens).
"""
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def tensor_bytes(model_dir):
    """{name: bytes} over the model's shards."""
    out = {}
    for name in sorted(os.listdir(model_dir)):
        if name.endswith(".safetensors"):
            for k, v in header(os.path.join(model_dir, name)).items():
                if k != "__metadata__":
                    out[k] = v["data_offsets"][1] - v["data_offsets"][0]
    return out


def expert_ids(dump):
    """{layer: set of expert ids} from the dump's model.layers.{i}.mlp.experts.idx taps."""
    h = header(dump)
    base = 8 + struct.unpack("<Q", open(dump, "rb").read(8))[0]
    used = {}
    with open(dump, "rb") as f:
        for k, v in h.items():
            if not k.endswith("mlp.experts.idx"):
                continue
            b, e = v["data_offsets"]
            f.seek(base + b)
            ids = np.frombuffer(f.read(e - b), dtype={"I32": np.int32, "I64": np.int64}[v["dtype"]])
            used[int(k.split(".")[2])] = set(int(i) for i in ids)
    return used


def sample(cmd):
    peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
    hwm = 0
    t0 = time.time()
    p = subprocess.Popen(cmd)
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    key, _, val = line.partition(":")
                    if key in peak:
                        peak[key] = max(peak[key], int(val.split()[0]) * 1024)
                    elif key == "VmHWM":
                        hwm = max(hwm, int(val.split()[0]) * 1024)
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
        time.sleep(0.02)
    return p.returncode, peak, hwm, time.time() - t0


def main():
    if "--" not in sys.argv or len(sys.argv) < 5:
        sys.exit(__doc__)
    i = sys.argv.index("--")
    model_dir, dump = sys.argv[1:3]
    rc, peak, hwm, secs = sample(sys.argv[i + 1:])
    if rc != 0:
        sys.exit(f"rss.py: the command exited {rc}")
    config = json.load(open(os.path.join(model_dir, "config.json")))
    text = config.get("text_config", config)
    experts = text["num_experts"]
    sizes = tensor_bytes(model_dir)
    expert_total = sum(v for k, v in sizes.items() if ".switch_mlp." in k)
    non_expert = sum(sizes.values()) - expert_total
    moe_layers = len({k.split("switch_mlp")[0] for k in sizes if ".switch_mlp." in k})
    per_expert = expert_total / (moe_layers * experts)
    cmd = sys.argv[i + 1:]
    tokens = set(cmd[cmd.index("--tokens") + 1].split(",")) if "--tokens" in cmd else None
    embed = sum(v for k, v in sizes.items() if ".embed_tokens." in k)
    if tokens is not None:  # the rows read, not the table
        non_expert -= embed - embed * len(tokens) / text["vocab_size"]
    used = expert_ids(dump)
    n_used = sum(len(s) for s in used.values())
    need = non_expert + n_used * per_expert
    gb = 1e9
    print(f"model: {sum(sizes.values()) / gb:.2f} GB (non-expert {non_expert / gb:.3f} touched of "
          f"{(sum(sizes.values()) - expert_total) / gb:.3f}: embedding table {embed / gb:.3f}, experts {expert_total / gb:.2f}: "
          f"{moe_layers} layers x {experts} x {per_expert / 1e6:.2f} MB)")
    print(f"experts routed to: {n_used} ({', '.join(f'layer {l}: {len(s)}' for l, s in sorted(used.items()))})"
          f" = {n_used * per_expert / gb:.3f} GB")
    print(f"must touch: {need / gb:.3f} GB")
    print(f"peak VmRSS {peak['VmRSS'] / gb:.3f} GB (anon {peak['RssAnon'] / gb:.3f}, file {peak['RssFile'] / gb:.3f}); "
          f"VmHWM {hwm / gb:.3f} GB; {hwm / need:.2f}x what it must touch; {secs:.1f} s")


if __name__ == "__main__":
    main()
