#!/usr/bin/env python3
"""Writes a tuning manifest: variants of bundled matvec_q kernels that differ only in their `let`s
(R rows per workgroup, U quads per lane per step, WG lanes), so one SPIR-V serves them all and
the device times every variant on the same cases in one process (gpu_issue13.sh tuneq2q8).

Usage: tune.py OUT.json MANIFEST.json...   (the bundled entries, e.g. compare/shaders/matvec_q2.json)

Per kernel: R in 4, 8, 16 (as min(R, rows / 1024), the bundled rule: a workgroup per row below
1024 rows) times U in 1, 2, 4 with the bundled WG rule; then at R 8, U 1 the WG rule changed:
S2 / S4 (a row's quads in 2 / 4 steps: half / a quarter of the lanes) and C64 / C256 (at most
64 / 256 lanes instead of 128)."""
import json
import re
import sys

# The bundled WG rule, with its cap (128) and the codes per lane per step made variables.
WG_RULE = re.compile(r"^min\(min\(128, (.*)\), max\(R, max\(subgroup_size, "
                     r"ceil_div\(cols, (\d+) \* U \* subgroup_size\) \* subgroup_size\)\)\)$")


def wg_rule(entry, cap=128, steps=1):
    m = WG_RULE.match(entry["let"]["WG"])
    if not m:
        sys.exit(f"tune.py: {entry['name']}: WG is not the bundled rule: {entry['let']['WG']}")
    limit, codes = m.group(1), int(m.group(2))
    per_step = f"{codes} * U" if steps == 1 else f"{codes} * U * {steps}"
    return (f"min(min({cap}, {limit}), max(R, max(subgroup_size, "
            f"ceil_div(cols, {per_step} * subgroup_size) * subgroup_size)))")


def variant(entry, name, r, u, cap=128, steps=1):
    v = json.loads(json.dumps(entry))
    v["name"] = name
    v["let"] = {"R": f"min({r}, max(1, floor(rows / 1024)))", "U": str(u), "WG": wg_rule(entry, cap, steps)}
    return v


def variants(entry):
    short = entry["name"].replace("matvec_", "")
    out = [variant(entry, f"{short}_R{r}_U{u}", r, u) for r in (4, 8, 16) for u in (1, 2, 4)]
    out += [variant(entry, f"{short}_R8_U1_S{s}", 8, 1, steps=s) for s in (2, 4)]
    out += [variant(entry, f"{short}_R8_U1_C{c}", 8, 1, cap=c) for c in (64, 256)]
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    kernels = []
    for path in sys.argv[2:]:
        with open(path) as f:
            kernels += variants(json.load(f))
    names = ", ".join(json.load(open(p))["name"] for p in sys.argv[2:])
    with open(sys.argv[1], "w") as f:
        json.dump({"name": f"{names} tuning", "version": 1, "kernels": kernels}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
