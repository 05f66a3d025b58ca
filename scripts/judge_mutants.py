#!/usr/bin/env python3
"""Does judge name the module a kernel bug is in? For a sample of each bundled kernel's mutants:
the model runs on the GPU with that one mutant (`bisect --mode free --mutant`); where bisect
catches it by its values (its first failing op: layer, module, token), `judge` holds the same
run's dump to the truth, and must fail at that layer or an earlier one. A mutant bisect catches
only by the access / race / uninitialised-read checks (no wrong value: the run went on with the
truth's output there) is counted apart: a dump cannot show it. One line per mutant, then the tally.

Usage: scripts/judge_mutants.py MOEORACLE MODEL [--per-kernel N] [--tokens 5,9,300,7]
       [--kernels a,b] [--timeout S]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

KERNELS = ["embedding", "rmsnorm", "matmul_q4", "matmul_q8", "conv1d_step", "qk_norm", "decay_beta", "delta_net",
           "rmsnorm_gated", "rope", "kv_append", "attention_scores", "attention_softmax", "attention_values",
           "attention_gate", "router_topk", "expert_gate_up", "moe_combine", "residual_add"]


def layer_of(where: str) -> int:
    m = re.match(r"model\.layers\.(\d+)\.", where)
    if m:
        return int(m.group(1))
    return -1 if where.startswith("model.embed_tokens") else 10**6  # final norm, lm_head, logits


def mutant_count(cli, model, kernel):
    r = subprocess.run([cli, "bisect", "--model", model, "--tokens", "1", "--mode", "free", "--mutant",
                        f"{kernel} #999999999"], capture_output=True, text=True)
    m = re.search(r"has (\d+) mutants", r.stdout + r.stderr)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("model")
    ap.add_argument("--per-kernel", type=int, default=6)
    ap.add_argument("--tokens", default="5,9,300,7")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--timeout", type=int, default=120)
    a = ap.parse_args()
    tally = {"caught": 0, "named": 0, "missed": 0, "late": 0, "not_caught": 0, "no_run": 0, "checks_only": 0,
             "stopped": 0}
    with tempfile.TemporaryDirectory() as w:
        for k in a.kernels.split(","):
            n = mutant_count(a.cli, a.model, k)
            if n == 0:
                print(f"{k}: no mutants (not a GLSL kernel of this manifest?)")
                continue
            picks = sorted({(i * n) // a.per_kernel for i in range(min(a.per_kernel, n))})
            for i in picks:
                dump, bj, jj = (os.path.join(w, x) for x in ("d.st", "b.json", "j.json"))
                for f in (dump, bj, jj):
                    if os.path.exists(f):
                        os.remove(f)
                try:
                    b = subprocess.run([a.cli, "bisect", "--model", a.model, "--tokens", a.tokens, "--mode", "free",
                                        "--mutant", f"{k} #{i}", "--dump", dump, "--json", bj,
                                        "--case-out", os.path.join(w, "case"), "--timeout-ms", "20000"],
                                       capture_output=True, text=True, timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    print(f"{k} #{i}: bisect past {a.timeout} s")
                    tally["no_run"] += 1
                    continue
                mid = next((l[7:] for l in b.stdout.splitlines() if l.startswith("mutant ")), f"{k} #{i}")
                if b.returncode == 0:
                    tally["not_caught"] += 1
                    print(f"{mid}: bisect passes it")
                    continue
                stop = next((l for l in b.stdout.splitlines() if l.startswith("the forward stopped")), None)
                if b.returncode == 1 and stop:
                    tally["stopped"] += 1
                    print(f"{mid}: bisect caught it; {stop[:100]} (no dump to judge)")
                    continue
                if b.returncode != 1 or not os.path.exists(bj) or not os.path.exists(dump):
                    tally["no_run"] += 1
                    last = (b.stdout + b.stderr).strip().splitlines()[-1:] or [""]
                    print(f"{mid}: bisect rc {b.returncode}, no verdict: {last[0][:100]}")
                    continue
                recs = json.load(open(bj))["records"]
                first = next(r for r in recs if r["status"] == "FAIL")
                if first.get("error"):
                    tally["checks_only"] += 1
                    print(f"{mid}: bisect {first['where']}: {first['error'][:80]} (no values to judge)")
                    continue
                tally["caught"] += 1
                j = subprocess.run([a.cli, "judge", dump, "--model", a.model, "--json", jj], capture_output=True,
                                   text=True)
                rep = json.load(open(jj)) if os.path.exists(jj) else {"first_failed": None, "modules": []}
                ff = rep["first_failed"]
                bl = layer_of(first["where"])
                if ff is None:
                    tally["missed"] += 1
                    verdict = "MISSED"
                    jl = None
                else:
                    jl = layer_of(ff)
                    ok = jl <= bl
                    tally["named" if ok else "late"] += 1
                    verdict = "named" if ok else "LATE"
                print(f"{mid}: bisect {first['where']} token {first['token']}; judge {ff} -> {verdict}")
    c = tally["caught"]
    print(f"caught by bisect {c}; judge named the layer or an earlier one in {tally['named']}"
          f" ({100.0 * tally['named'] / c if c else 0:.1f} %), later {tally['late']}, missed {tally['missed']};"
          f" caught only by the checks {tally['checks_only']}; caught, the forward stopped {tally['stopped']};"
          f" not caught by bisect {tally['not_caught']};"
          f" no verdict {tally['no_run']}")


if __name__ == "__main__":
    sys.exit(main())
