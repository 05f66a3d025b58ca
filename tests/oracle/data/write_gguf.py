#!/usr/bin/env python3
"""An independent GGUF writer for tests/oracle/gguf_test.cpp, written from the format's
documentation with Python's struct module only: version 3, little-endian, alignment 64, two
tensors (an f32 vector and a q8_0 matrix). Usage: write_gguf.py OUT"""
import struct
import sys

ALIGN = 64


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def main(out):
    meta = [
        kv("general.architecture", 8, gstr("qwen3moe")),
        kv("general.alignment", 4, struct.pack("<I", ALIGN)),
        kv("qwen3moe.expert_count", 4, struct.pack("<I", 8)),
        kv("qwen3moe.rope.freq_base", 6, struct.pack("<f", 1e6)),
        # array of 3 f32 scores
        kv("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 3) + struct.pack("<3f", 0.0, -1.0, -2.5)),
    ]
    norm = struct.pack("<5f", 1, 2, 3, 4, 5)
    # q8_0: blocks of 32 int8 with an f16 scale first; two rows of one block each.
    q = struct.pack("<e", 1.0) + struct.pack("<32b", *[j - 10 for j in range(32)])
    q += struct.pack("<e", 0.5) + struct.pack("<32b", *[-j for j in range(32)])
    tensors = [("output_norm.weight", [5], 0, norm), ("blk.0.attn_q.weight", [32, 2], 8, q)]
    infos, data = b"", b""
    for name, ne, gtype, payload in tensors:
        infos += gstr(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        infos += struct.pack("<IQ", gtype, len(data))
        data += payload + b"\0" * (-len(payload) % ALIGN)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)) + b"".join(meta) + infos
    head += b"\0" * (-len(head) % ALIGN)
    with open(out, "wb") as f:
        f.write(head + data)


if __name__ == "__main__":
    main(sys.argv[1])
