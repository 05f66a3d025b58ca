#!/usr/bin/env python3
"""Side by side: the same `compare --perf` cases timed with the cold flush by fill and by read
(MOE_PERF_FLUSH; scripts/device/gpu_issue13.sh flushab). Reads the console outputs (perf lines)
of the two runs, pairs them by op, kernel and shape, and prints per case the cold median of each,
read / fill, and the read run's % of copy and of same-size, then its warm median.

Usage: flush_ab.py FILL.txt READ.txt [FILL2.txt READ2.txt ...]"""
import re
import sys

LINE = re.compile(r"^  (\S+)  (.+?)  \[(.*)\]  cold (\S+) ms .*?\(([\d.]+)% of copy(?:, ([\d.]+)% of same-size)?\)"
                  r".*warm (\S+) ms")


def perf_lines(path):
    out = {}
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if m:
            op, kernel, shape, cold, pct, same, warm = m.groups()
            out[(op, kernel, shape)] = (float(cold), float(pct), float(same) if same else None, float(warm))
    return out


def main():
    args = sys.argv[1:]
    if len(args) < 2 or len(args) % 2:
        sys.exit(__doc__)
    print(f"{'case':64} {'fill ms':>9} {'read ms':>9} {'r/f':>5} {'%copy':>6} {'%same':>6} {'warm ms':>9}")
    for fill_path, read_path in zip(args[::2], args[1::2]):
        fill, read = perf_lines(fill_path), perf_lines(read_path)
        for key, (rc, rp, rs, rw) in read.items():
            if key not in fill:
                continue
            fc = fill[key][0]
            name = f"{key[1].split()[0]} {key[2]}"[:64]
            same = f"{rs:6.1f}" if rs is not None else "     -"
            print(f"{name:64} {fc:9.4g} {rc:9.4g} {rc / fc:5.2f} {rp:6.1f} {same} {rw:9.4g}")


if __name__ == "__main__":
    main()
