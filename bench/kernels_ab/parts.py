#!/usr/bin/env python3
"""Writes matvec_q4's A/B manifests and its diagnostics from the bundled source and entry (issue 13),
so they track the bundled kernel instead of being copies of it.

Diagnostics (not kernels: wrong results by design, timed all the same;
records/benchmarks-history.md, "matvec_q4 taken apart"), each the bundled matvec_q4 with one thing taken out:
  matvec_q4_memonly   its code arithmetic (one FFMA a word, every load kept)
  matvec_q4_alu       its weight / scale / bias loads (codes made from the row and quad)
  matvec_q4_nox       its x reads
  matvec_q4_nosb      its scale / bias loads only
  matvec_q4_arith     every load (arithmetic alone)
  matvec_q4_skeleton  every load and the arithmetic (grid, reductions, stores)
  matvec_q4_noloop    the whole loop over the quads (the grid, the reductions of zeros, the stores)
  matvec_q4_store     the loop and the reductions (the grid and the stores: the dispatch floor of
                      this grid, against which the skeleton's 6.8 us at in_proj_qkv reads)
Manifests: q4parts.json (bundled + the diagnostics), q4small.json (the bundled SPIR-V at 32- and
64-lane workgroups), q4xr.json (bundled + matvec_q4_xr.comp, x in registers, at R / U / G points).

Usage: parts.py DIR SHADERS"""
import json
import sys

INNER = """          const uint wd = w[u * R + r][k], wh = wd >> 16;
          [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(code(wd, p), lo[p], sq[r]);
          [[unroll]] for (uint p = 0u; p < 4u; ++p) sq[r] = fma(code(wh, p), hi[p], sq[r]);"""
ONE_FFMA = "          sq[r] = fma(uintBitsToFloat(w[u * R + r][k] & 0x3F7FFFFFu), lo[k] + hi[k], sq[r]);"
W_LOAD = "        w[u * R + r] = wq[row * quads + j];"
W_MADE = "        w[u * R + r] = uvec4(row * 2654435761u ^ j, j * 40503u + row, row + j, row ^ (j << 7));"
SB_LOAD = """        s[u * R + r] = bf16_at(scales[g >> 1], g);
        b[u * R + r] = bf16_at(biases[g >> 1], g);"""
SB_MADE = """        s[u * R + r] = uintBitsToFloat(0x3C000000u | (g & 0xFFFFu));
        b[u * R + r] = uintBitsToFloat(0x3B000000u | (g & 0xFFFFu));"""
X_LOAD = "const vec4 lo = x[8u * j + 2u * k], hi = x[8u * j + 2u * k + 1u];"
X_MADE = "const vec4 lo = vec4(float(j + k) * 0.001, 0.5, 0.25, 0.125), hi = vec4(0.75, float(k) * 0.01, 0.3, 0.6);"
REDUCE = "  [[unroll]] for (uint r = 0u; r < R; ++r) {\n    const float sum = subgroupAdd(acc[r]);"
LOOP_START = "  for (uint base = 0u; base < quads; base += U * WG) {"
STORE = "    y[row0 + t] = sum;"
# What each diagnostic takes out, and the buffers it must still touch (an unused binding is
# dropped from the SPIR-V, and the manifest declares it).
PARTS = {
    "memonly": ("its code arithmetic cut to one FFMA a word (every load kept)", [(INNER, ONE_FFMA)], ""),
    "alu": ("no weight, scale or bias loads (codes made from the row and quad; x still read)",
            [(W_LOAD, W_MADE), (SB_LOAD, SB_MADE)], "uintBitsToFloat(wq[0].x ^ scales[0] ^ biases[0])"),
    "nox": ("no x reads (x made from the quad)", [(X_LOAD, X_MADE)], "x[0].x"),
    "nosb": ("no scale or bias loads (made from the group index)", [(SB_LOAD, SB_MADE)],
             "uintBitsToFloat(scales[0] ^ biases[0])"),
    "arith": ("no loads at all (codes and x made from the row and quad: its arithmetic alone)",
              [(W_LOAD, W_MADE), (SB_LOAD, SB_MADE), (X_LOAD, X_MADE)],
              "uintBitsToFloat(wq[0].x ^ scales[0] ^ biases[0]) + x[0].x"),
    "skeleton": ("no loads and one FFMA a word: the grid, the reduction and the stores alone",
                 [(W_LOAD, W_MADE), (SB_LOAD, SB_MADE), (X_LOAD, X_MADE), (INNER, ONE_FFMA)],
                 "uintBitsToFloat(wq[0].x ^ scales[0] ^ biases[0]) + x[0].x"),
    "noloop": ("no loop over the quads (acc stays 0; the reductions, the barrier and the stores kept)",
               [("LOOP", "")], "uintBitsToFloat(wq[0].x ^ scales[0] ^ biases[0]) + x[0].x + float(U)"),
    "store": ("no loop and no reductions (each row's y written by one lane: the grid and the stores)",
              [("LOOP", ""), ("REDUCE_ALL", "")], ""),
}


def cut(src, start, end):
    """src without the text from start up to (not including) end."""
    a = src.index(start)
    return src[:a] + src[src.index(end, a):]


def diagnostic(src, what, subs, keep):
    for old, new in subs:
        if old == "LOOP":  # the loop over the quads, up to the reductions
            src = cut(src, LOOP_START, REDUCE)
            continue
        if old == "REDUCE_ALL":  # reductions and barrier: lane t < R stores row t's y directly
            src = cut(src, REDUCE, "  if (t < R && row0 + t < pc.rows)")
            src = src.replace("    for (uint i = 0u; i < gl_NumSubgroups; ++i) sum += part[t * WG + i];\n", "")
            src = src.replace(STORE, "    y[row0 + t] = uintBitsToFloat(wq[0].x ^ scales[0] ^ biases[0]) + x[0].x + float(U + gl_NumSubgroups);")
            continue
        assert old in src, old
        src = src.replace(old, new)
    if keep:
        src = src.replace(REDUCE, f"  if (pc.rows == 0xFFFFFFFFu) acc[0] += {keep};  // keeps the bindings\n" + REDUCE, 1)
    head = ("// DIAGNOSTIC, NOT A KERNEL (its results are wrong by design), written by bench/kernels_ab/parts.py:\n"
            f"// the bundled matvec_q4 with {what}.\n")
    return src.replace("#version 450\n", "#version 450\n" + head, 1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, shaders = sys.argv[1], sys.argv[2]
    src = open(f"{shaders}/matvec_q4.comp").read()
    bundled = json.load(open(f"{shaders}/matvec_q4.json"))

    def entry(name, spirv=None, lets=None):
        e = json.loads(json.dumps(bundled))
        e["name"] = name
        if spirv:
            e["spirv"] = spirv
        if lets:
            e["let"] = lets
        return e

    def write(name, title, kernels):
        open(f"{out}/{name}", "w").write(json.dumps({"name": title, "version": 1, "kernels": kernels}, indent=1) + "\n")

    parts = [bundled]
    for n, (what, subs, keep) in PARTS.items():
        open(f"{out}/matvec_q4_{n}.comp", "w").write(diagnostic(src, what, subs, keep))
        parts.append(entry(f"q4_{n}", f"matvec_q4_{n}.spv"))
    write("q4parts.json", "matvec_q4 taken apart (diagnostic: wrong results by design)", parts)

    small = [bundled] + [entry(f"q4_R{r}_U{u}_WG{wg}", lets={"R": f"min({r}, max(1, floor(rows / 1024)))", "U": str(u), "WG": str(wg)})
                         for r, u, wg in [(8, 2, 32), (4, 4, 32), (4, 2, 32), (8, 1, 32), (2, 4, 32), (4, 1, 32), (16, 1, 64), (8, 4, 32)]]
    write("q4small.json", "matvec_q4: bundled, and at small workgroups (one NVIDIA subgroup)", small)

    wg_one_step = ("min(min(max_workgroup_invocations, max_workgroup_subgroups * subgroup_size), max(R, max(subgroup_size, "
                   "ceil_div(cols, 32 * U * subgroup_size) * subgroup_size)))")
    xr = [bundled]
    for r, u, g in [(8, 1, 528), (8, 1, 1056), (4, 1, 1056), (8, 2, 528), (8, 2, 1056), (16, 1, 528), (4, 1, 2112)]:
        e = entry(f"q4_xr_R{r}_U{u}_G{g}", "matvec_q4_xr.spv",
                  {"R": f"min({r}, max(1, floor(rows / 1024)))", "U": str(u), "G": str(g), "WG": wg_one_step})
        e["dispatch"] = ["min(G, ceil_div(rows, R))", "1", "1"]
        e["limits"] = [l for l in e["limits"] if "max_workgroup_count_x" not in l] + [
            "ceil_div(cols, 32 * U) <= WG", "min(G, ceil_div(rows, R)) <= max_workgroup_count_x"]
        xr.append(e)
    write("q4xr.json", "matvec_q4: bundled, x-in-registers persistent variants", xr)


if __name__ == "__main__":
    main()
