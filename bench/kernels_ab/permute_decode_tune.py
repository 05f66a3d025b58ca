#!/usr/bin/env python3
"""Writes a tuning manifest for the decode chain's two stages: the bundled permute_gate_up_decode and
permute_down_scatter with only their `let`s changed (R rows per workgroup, U quads per lane per
step, the lane cap), so the bundled SPIR-V serves every variant and the device times them all on
the same cases in one process (gpu_issue13.sh permdectune).

Usage: permute_decode_tune.py OUT.json compare/shaders/permute_gate_up_decode.json
                                       compare/shaders/permute_down_scatter.json

gate/up: R in 2, 4, 8 times U in 1, 2 at lane caps 128 and 64 (bundled since 2026-11-28), and
R 4 U 1 at 32 and 256. down_scatter: R in 4, 8, 16, 32 times U in 1, 2, 3 (P, the lanes a listed row gets,
follows U by the bundled rule). A first version also had R 2 and U 4, never the fastest
(records/device-runs.md, 2026-11-28 05:05). Every variant keeps the bundled limits, so a point that
does not fit a case is skipped, not run."""
import json
import re
import sys


def variant(entry, name, lets):
    v = json.loads(json.dumps(entry))
    v["name"] = name
    v["let"] = dict(v["let"], **lets)
    return v


def gate_up(entry):
    wg = entry["let"]["WG"]
    m = re.match(r"^min\(min\((\d+), ", wg)
    if not m:
        sys.exit(f"permute_decode_tune.py: {entry['name']}: WG is not the bundled rule: {wg}")

    def capped(r, u, cap):
        name = f"gate_up_decode_R{r}_U{u}" + ("" if cap == 128 else f"_C{cap}")
        return variant(entry, name, {"R": str(r), "U": str(u),
                                     "WG": f"min(min({cap}, " + wg[m.end():]})
    return ([capped(r, u, cap) for cap in (128, 64) for r in (2, 4, 8) for u in (1, 2)] +
            [capped(4, 1, cap) for cap in (32, 256)])


def down(entry):
    return [variant(entry, f"down_scatter_R{r}_U{u}", {"R": str(r), "U": str(u)})
            for r in (4, 8, 16, 32) for u in (1, 2, 3)]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    gu, ds = (json.load(open(p)) for p in sys.argv[2:4])
    kernels = gate_up(gu) + down(ds)
    for k in kernels:  # the SPIR-V sits beside the manifest in devbin's kernels_ab/
        k["spirv"] = k["spirv"].split("/")[-1]
    json.dump({"name": "the decode chain's stages at other R / U / WG", "version": 1, "kernels": kernels},
              open(sys.argv[1], "w"), indent=1)
    print(f"{sys.argv[1]}: {len(kernels)} kernels")


main()
