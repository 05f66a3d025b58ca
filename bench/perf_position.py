#!/usr/bin/env python3
"""Position stability of --perf figures (issue 13): reads the JSON report of one
`moeoracle compare --perf --seeds N --json R` process (cases in run order: seed 1 of every shape,
then seed 2, ...), and prints per (kernel, shape) the cold and warm medians at its first, middle
and last seed with their positions in the run, and the spread (max/min - 1) over all its seeds.
Usage: perf_position.py REPORT.json [MIN_MS]  (cases faster than MIN_MS, default 0.02 ms, are
listed apart: launch-bound, where a few microseconds are a large fraction).
Last, the trend: per (kernel, shape) the median cold time of its later half of seeds over that of
its earlier half; a position effect shows as ratios away from 1 in one direction (noise, as on a
shared CPU driver, scatters them both ways)."""
import json
import sys

report = json.load(open(sys.argv[1]))
min_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
by = {}
for pos, c in enumerate(report["cases"]):
    t = c.get("timing")
    if c["status"] != "PASS" or not t:
        continue
    by.setdefault((c["kernel"], c["shape"]), []).append((pos, t["cold_median_ms"], t["warm_median_ms"]))
worst = {True: 0.0, False: 0.0}
ratios = []
print(f"{len(report['cases'])} cases; per (kernel, shape): cold ms at first/middle/last seed (position), "
      "spread over all seeds; warm likewise")
for (kernel, shape), rows in by.items():
    first, mid, last = rows[0], rows[len(rows) // 2], rows[-1]
    cold = [r[1] for r in rows]
    warm = [r[2] for r in rows]
    sc, sw = max(cold) / min(cold) - 1, max(warm) / min(warm) - 1
    big = min(cold) >= min_ms
    if len(cold) >= 2:
        half = len(cold) // 2
        early, late = sorted(cold[:half]), sorted(cold[half:])
        ratios.append(late[len(late) // 2] / early[len(early) // 2])
    worst[big] = max(worst[big], sc, sw)
    print(f"  {kernel:12s} {shape[:58]:58s} cold {first[1]:.4g} ({first[0]}) {mid[1]:.4g} ({mid[0]}) "
          f"{last[1]:.4g} ({last[0]}) spread {100 * sc:.1f}%  warm spread {100 * sw:.1f}%"
          + ("" if big else "  [< %g ms]" % min_ms))
print(f"largest spread: {100 * worst[True]:.1f}% (cases >= {min_ms} ms), {100 * worst[False]:.1f}% (shorter)")
if ratios:
    ratios.sort()
    print(f"trend (later / earlier half, median cold): median {ratios[len(ratios) // 2]:.3f}, "
          f"range {ratios[0]:.3f}..{ratios[-1]:.3f}, {sum(r > 1 for r in ratios)} of {len(ratios)} above 1")
