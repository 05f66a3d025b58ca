#!/usr/bin/env python3
"""An independent reader of llama.cpp's KL-divergence base file (llama-perplexity
--save-all-logits / --kl-divergence-base), written from the layout as llama.cpp documents and
reads it, with struct and numpy only (none of moeoracle's code), and the statistics
llama-perplexity --kl-divergence derives from it for a candidate's logits.

Usage as a check (tests/cli/kl_base.sh):
  read_kld.py BASE.kld WINDOW_DIR TRUTH_0.st [TRUTH_1.st ...] -- CAND_0.st [CAND_1.st ...]
one safetensors dump per chunk with a `logits` tensor [n_ctx, n_vocab] (the truth's, then the
candidate's). Checks the file against the truth, prints the KLD llama-perplexity would report and
the allowance within which an exact KLD must agree with it, and writes the scored rows of both
(WINDOW_DIR/truth.st, cand.st) for `moeoracle drift`. Exits 1 when a check fails."""
import json
import struct
import sys

import numpy as np


def read_kld(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"_logits_":
        raise ValueError(f"{path}: no _logits_ magic")
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<iii", data, 8)
    off = 20
    tokens = np.frombuffer(data, "<i4", n_ctx * n_chunk, off).reshape(n_chunk, n_ctx)
    off += 4 * n_ctx * n_chunk
    nv = 2 * ((n_vocab + 1) // 2) + 4
    per_chunk = n_ctx - 1 - n_ctx // 2
    words = np.frombuffer(data, "<u2", n_chunk * per_chunk * nv, off).reshape(n_chunk, per_chunk, nv)
    if off + words.nbytes != len(data):
        raise ValueError(f"{path}: {len(data)} bytes, layout says {off + words.nbytes}")
    head = words[:, :, :4].copy().view("<f4")  # [chunk, pos, 2]: scale, min_log_prob
    scale, min_log_prob = head[..., 0], head[..., 1]
    q = words[:, :, 4:4 + n_vocab].astype(np.float32)
    log_prob = scale[..., None] * q + min_log_prob[..., None]  # float32, as llama.cpp
    return dict(n_ctx=n_ctx, n_vocab=n_vocab, n_chunk=n_chunk, tokens=tokens, scale=scale, log_prob=log_prob)


def read_logits(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    t = header["logits"]
    if t["dtype"] != "F32":
        raise ValueError(f"{path}: logits are {t['dtype']}")
    a, b = t["data_offsets"]
    return np.frombuffer(body[a:b], "<f4").reshape(t["shape"])


def write_logits(path, rows):
    rows = np.ascontiguousarray(rows, "<f4")
    header = json.dumps({"logits": {"dtype": "F32", "shape": list(rows.shape), "data_offsets": [0, rows.nbytes]}})
    header += " " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header.encode() + rows.tobytes())


def log_softmax(logits):
    x = logits.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main(argv):
    split = argv.index("--")
    base = read_kld(argv[1])
    window, truths, cands = argv[2], argv[3:split], argv[split + 1:]
    first = base["n_ctx"] // 2
    if len(truths) != base["n_chunk"] or len(cands) != base["n_chunk"]:
        print(f"FAIL: {base['n_chunk']} chunks in the file, {len(truths)} truth and {len(cands)} candidate dumps")
        return 1
    kld, exact, allow, same, worst_lp, rows_t, rows_c = [], [], [], [], 0.0, [], []
    for k in range(base["n_chunk"]):
        lt = read_logits(truths[k])[first:base["n_ctx"] - 1]
        lc = read_logits(cands[k])[first:base["n_ctx"] - 1]
        rows_t.append(lt), rows_c.append(lc)
        lp_truth, lp_cand = log_softmax(lt), log_softmax(lc)
        lp_base = base["log_prob"][k].astype(np.float64)
        half_step = base["scale"][k][:, None].astype(np.float64) / 2
        # Each stored log-probability above the 16-nat floor is the truth's within half a step
        # plus the f32 roundings of min_log_prob, scale * q and their sum (values below 32 in
        # magnitude: 2^-20 each, 4 2^-20 allowed).
        above = lp_truth > lp_truth.max(axis=-1, keepdims=True) - 16
        err = np.abs(lp_base - lp_truth)[above]
        allowed = np.broadcast_to(half_step + 4 * 2.0 ** -20, lp_truth.shape)[above]
        worst_lp = max(worst_lp, float((err / allowed).max()))
        # llama-perplexity's KLD per position: sum over p_log_base > -16 of p_base (lp_base - lp_cand).
        p_base = np.exp(lp_base)
        kld.extend(np.where(lp_base > -16, p_base * (lp_base - lp_cand), 0.0).sum(axis=-1))
        # The exact KLD and how far the reader's may be from it: each base log-probability is off by
        # d <= half a step (+ the f32 roundings), moving each term p (lp_b - lp_c) by p d (1 + |lp_b - lp_c|)
        # to first order; the terms under the floor are left out whole.
        p_t, gap = np.exp(lp_truth), np.abs(lp_truth - lp_cand)
        exact.extend((p_t * (lp_truth - lp_cand)).sum(axis=-1))
        d = half_step[:, 0] + 4 * 2.0 ** -20
        allow.extend(2 * d * (p_t * (1 + gap)).sum(axis=-1) + np.where(above, 0.0, p_t * (gap + 16)).sum(axis=-1))
        same.extend(lp_base.argmax(axis=-1) == lc.argmax(axis=-1))
    write_logits(f"{window}/truth.st", np.concatenate(rows_t))
    write_logits(f"{window}/cand.st", np.concatenate(rows_c))
    print(f"log-probs within half a step of the truth: worst {worst_lp:.3f} of the allowance")
    print(f"reader: positions {len(kld)}, mean KLD {np.mean(kld):.9g}, exact {np.mean(exact):.9g}, "
          f"allowance {np.mean(allow):.3g}, same top {100 * np.mean(same):.4f} %")
    agree = abs(np.mean(kld) - np.mean(exact)) <= np.mean(allow)
    print(f"reader KLD {'within' if agree else 'OUTSIDE'} the allowance of the exact one")
    return 0 if worst_lp <= 1.0 and agree else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
