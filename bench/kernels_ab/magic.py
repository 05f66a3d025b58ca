#!/usr/bin/env python3
"""Writes permute_gate_up_magic.comp, expert_gate_up_magic.comp and magic.json from the bundled
sources (issue 13): the bundled word kernels with each code made a float by the exponent-or trick
instead of float(int).

Why: the two gate/up kernels turn codes into floats with float((w >> BITS n) & MASK), an int->float
conversion that NVIDIA runs at a quarter of the FP32 rate; at decode they do it for every code of
gate and up (the A17B chain: 84 M codes a token, ~20 us at the conversion rate alone). The matvec
and matmul kernels avoid it: code p of a 16-bit half, masked in place and or-ed with the exponent of
2^(23 - BITS p), is the float 2^(23 - BITS p) + q exactly, and minus that power of two float(q)
exactly. So the variants compute the same values in the same order as the bundled kernels: their
results are bit-identical, and their A/B isolates the conversion's cost (the 16-byte
permute_gate_up_vec.comp changed the loads too, and lost).

magic.json: the bundled permute_gate_up and its variant (op permute_gate_up), the bundled
permute_down_scatter, the chain magic gate_up -> bundled down_scatter for moe_permute_fuse (renamed
copies in a sequence, as build.sh's other chains), and expert_gate_up with its variant.

Usage: magic.py DIR SHADERS"""
import json
import sys

CONVERT = {
    "dg[n] = fma(float((wg >> (BITS * n)) & MASK), sg, bg);": "dg[n] = fma(code(wg, n), sg, bg);",
    "du[n] = fma(float((wu >> (BITS * n)) & MASK), su, bu);": "du[n] = fma(code(wu, n), su, bu);",
}
CODE = """// Code n of word w as an exact float without an int->float conversion (bench/kernels_ab/magic.py):
// masked in place within its 16-bit half and or-ed with the exponent of 2^(23 - BITS p), the float
// 2^(23 - BITS p) + q exactly; minus that power of two, float(q) exactly.
float code(uint w, uint n) {
  const uint half_codes = 16u / BITS, h = n < half_codes ? w : w >> 16, p = n % half_codes;
  const uint e = (150u - BITS * p) << 23;
  return uintBitsToFloat((h & (MASK << (BITS * p))) | e) - uintBitsToFloat(e);
}
"""


def variant(src, name):
    for old, new in CONVERT.items():
        assert old in src, (name, old)
        src = src.replace(old, new)
    anchor = "float bf16_at("
    assert anchor in src, name
    src = src.replace(anchor, CODE + anchor, 1)
    head = (f"// A/B VARIANT written by bench/kernels_ab/magic.py from the bundled {name}: codes made floats\n"
            "// by the exponent-or trick, not float(int) (magic.py says why); results bit-identical.\n")
    return src.replace("#version 450\n", "#version 450\n" + head, 1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, shaders = sys.argv[1], sys.argv[2]
    entries = {}
    for name in ("permute_gate_up", "expert_gate_up"):
        open(f"{out}/{name}_magic.comp", "w").write(variant(open(f"{shaders}/{name}.comp").read(), name))
        bundled = json.load(open(f"{shaders}/{name}.json"))
        entries[name] = bundled
        entries[name + "_magic"] = dict(bundled, name=f"{name}_magic", spirv=f"{name}_magic.spv")
    down = json.load(open(f"{shaders}/permute_down_scatter.json"))
    # The chain: renamed copies bound to the whole op (a chain's stages bind the op's tensor names).
    chain = [dict(e, name=f"{e['ops'][0]}_magic_chain", ops=["moe_permute_fuse"])
             for e in (entries["permute_gate_up_magic"], down)]
    kernels = [entries["permute_gate_up"], entries["permute_gate_up_magic"], down] + chain + [
        entries["expert_gate_up"], entries["expert_gate_up_magic"]]
    sequences = [{"name": "permute_magic_chain", "op": "moe_permute_fuse", "kernels": [c["name"] for c in chain]}]
    json.dump({"name": "gate/up kernels: bundled and exponent-or variants", "version": 1, "kernels": kernels,
               "sequences": sequences}, open(f"{out}/magic.json", "w"), indent=1)


if __name__ == "__main__":
    main()
