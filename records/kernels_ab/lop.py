#!/usr/bin/env python3
"""Writes matvec_q8_lop.comp and lop.json from the bundled source (issue 13): the bundled factored
matvec_q8 with each code made by ONE logic operation with ONE constant.

matvec_q2 and matvec_q4 are bundled in this form since 2026-11-27 (H200: 1.00-1.20x at 2 bits,
0.99-1.04x at 4; records/benchmarks-history.md); at 8 bits it gained nothing (1.00x at every timing shape), so
matvec_q8 keeps the two-operation form and this variant stays an A/B. The text below is the
reasoning as it was written for all three (the 2- and 4-bit forms are now the bundled sources).

Why: the bundled kernels make code p of a 16-bit half h as (h & (mask << bits*p)) | exponent_p:
two constants, and a Hopper LOP3 takes one immediate. The driver's code sizes (pipeline_stats:
~5 instructions a code and row at matvec_q4, where 3 + per-row loads were expected) suggest it
spends two instructions there. The variant puts one exponent (2^23) on each half once per word,
t = (half) | 2^23's exponent, and takes code p as t & (exponent | (mask << bits*p)): the float
2^23 + q 2^(bits p), minus 2^23 exactly q 2^(bits p); x is scaled by 2^(-bits p) once per quad for
all R rows (exact: a power of two), so each product is q x exactly as before and every sum
rounds as in the bundled kernel: bit-identical results unless |x| < 2^-112 (then x 2^(-bits p)
is subnormal and may lose bits). Same manifest entries (rules, limits) as the bundled kernels.

Usage: lop.py DIR SHADERS"""
import json
import sys

HELPERS = {
    # bits: the x scale per code position within a half, as GLSL
    8: "const vec4 SC = vec4(1.0, 0.00390625, 1.0, 0.00390625);  // 256^-p of the low and high half's codes",
}
FIELD = """const uint EXP23 = 150u << 23;  // the exponent field of 2^23
// Code p of a half t (16 code bits under EXP23), in place: the float 2^23 + q 2^(BITS p); minus 2^23
// it is q 2^(BITS p) exactly (< 2^16). One logic operation with one constant.
float field(uint t, uint p) { return uintBitsToFloat(t & (EXP23 | (MASKu << (BITSu * p)))) - 8388608.0; }
"""
SUBS = {
    8: [("        sx4 += xk;\n", "        sx4 += xk;\n        const vec4 xs = xk * SC;\n"),
        ("""          const uint wd = w[u * R + r][k], wh = wd >> 16;
          [[unroll]] for (uint p = 0u; p < 2u; ++p) sq[r] = fma(code(wd, p), xk[p], sq[r]);
          [[unroll]] for (uint p = 0u; p < 2u; ++p) sq[r] = fma(code(wh, p), xk[2u + p], sq[r]);""",
         """          const uint wd = w[u * R + r][k], tl = (wd & 0xFFFFu) | EXP23, th = (wd >> 16) | EXP23;
          [[unroll]] for (uint p = 0u; p < 2u; ++p) sq[r] = fma(field(tl, p), xs[p], sq[r]);
          [[unroll]] for (uint p = 0u; p < 2u; ++p) sq[r] = fma(field(th, p), xs[2u + p], sq[r]);""")],
}
MASK = {8: 255}


def variant(src, bits):
    for old, new in SUBS[bits]:
        assert old in src, (bits, old)
        src = src.replace(old, new)
    anchor = "float bf16_at("
    helpers = FIELD.replace("BITS", str(bits)).replace("MASK", str(MASK[bits])) + HELPERS[bits] + "\n"
    src = src.replace(anchor, helpers + anchor, 1)
    head = ("// A/B VARIANT written by records/kernels_ab/lop.py from the bundled matvec_q%d: one logic operation\n"
            "// with one constant a code (lop.py says why).\n" % bits)
    return src.replace("#version 450\n", "#version 450\n" + head, 1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, shaders = sys.argv[1], sys.argv[2]
    kernels = []
    for bits in (8,):
        name = f"matvec_q{bits}"
        open(f"{out}/{name}_lop.comp", "w").write(variant(open(f"{shaders}/{name}.comp").read(), bits))
        bundled = json.load(open(f"{shaders}/{name}.json"))
        v = json.loads(json.dumps(bundled))
        v["name"], v["spirv"] = f"{name}_lop", f"{name}_lop.spv"
        kernels += [bundled, v]
    json.dump({"name": "matvec_q8: bundled and one-LOP-a-code variant", "version": 1, "kernels": kernels},
              open(f"{out}/lop.json", "w"), indent=1)


if __name__ == "__main__":
    main()
