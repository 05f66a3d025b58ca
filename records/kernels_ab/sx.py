#!/usr/bin/env python3
"""Writes the shared-x A/B variants of the bundled matvec_q kernels and their manifest (issue 13).

In the bundled matvec_q{2,4,8} lane t reads its quad's x itself: V vec4 per quad (V = 16, 8, 4 at
2, 4, 8 bits), lanes 16 V bytes apart, so one 16-byte x load of a subgroup touches up to 32
cache lines. The variant (matvec_q{b}_sx.comp, generated from the bundled source so it tracks
it) has the workgroup copy each step's x into shared memory, adjacent lanes on adjacent vec4s,
in a padded layout (quad q's vec4s at (V+1) q .. (V+1) q + V - 1: 16-byte reads of adjacent quads
fall in distinct banks), then reads it from there; two barriers per step.

Usage: sx.py DIR SHADERS   (writes DIR/matvec_q{2,4,8}_sx.comp, DIR/sx.json: each bundled entry
followed by its variant at the same lets, with a shared-memory limit; DIR/sx_only.json: the
variants alone, for seed records)"""
import json
import re
import sys

V = {2: 16, 4: 8, 8: 4}


def variant_source(src, bits):
    v = V[bits]
    head = ("// A/B variant of the bundled matvec_q%d, written by records/kernels_ab/sx.py: x staged per step in\n"
            "// shared memory (see sx.py).\n" % bits)
    src = src.replace("#version 450\n", "#version 450\n" + head, 1)
    decl = "shared float part[R * WG];  // [row][subgroup]"
    assert decl in src
    src = src.replace(decl, f"shared vec4 xs[U * WG * {v + 1}u];  // this step's x: quad base + q's vec4s at {v + 1}q ..\n" + decl)
    lines = src.split("\n")
    k = next(i for i, l in enumerate(lines) if "const uint j = base + u * WG + t;" in l)
    assert "[[unroll]] for (uint u = 0u; u < U; ++u) {" in lines[k - 1]
    stage = [
        "    barrier();  // the last step's reads of xs are done",
        f"    for (uint i = t; i < U * WG * {v}u; i += WG)",
        f"      xs[{v + 1}u * (i / {v}u) + i % {v}u] = x[{v}u * min(base + i / {v}u, quads - 1u) + i % {v}u];",
        "    barrier();",
    ]
    lines[k - 1:k - 1] = stage
    src = "\n".join(lines)
    pat = re.compile(rf"\bx\[{v}u \* j \+ ")
    n = len(pat.findall(src))
    assert n >= 1, bits
    return pat.sub(f"xs[{v + 1}u * (u * WG + t) + ", src)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, shaders = sys.argv[1], sys.argv[2]
    both, only = [], []
    for bits in (4, 8, 2):
        src = open(f"{shaders}/matvec_q{bits}.comp").read()
        open(f"{out}/matvec_q{bits}_sx.comp", "w").write(variant_source(src, bits))
        e = json.load(open(f"{shaders}/matvec_q{bits}.json"))
        s = json.loads(json.dumps(e))
        s["name"], s["spirv"] = f"matvec_q{bits}_sx", f"matvec_q{bits}_sx.spv"
        s["limits"].append(f"U * WG * {16 * (V[bits] + 1)} + R * WG * 4 <= max_shared_memory")
        both += [e, s]
        only.append(s)
    for name, title, ks in (("sx.json", "matvec_q: bundled and shared-x variants", both),
                            ("sx_only.json", "matvec_q shared-x variants alone", only)):
        open(f"{out}/{name}", "w").write(json.dumps({"name": title, "version": 1, "kernels": ks}, indent=1) + "\n")


if __name__ == "__main__":
    main()
