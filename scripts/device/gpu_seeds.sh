#!/usr/bin/env bash
# Many seeds on the GPU machine: SHARDS (default 16) `moeoracle compare` processes in parallel
# (the f64 truth on the CPU is the bottleneck; shards split by seed), summed. Keeps only the
# summary, FAIL and WARN lines of each shard.
# Usage: gpu_seeds.sh NAME SHAPES SEEDS [compare args...]
cd "$(dirname "$0")"
name=$1 shapes=$2 seeds=$3; shift 3
N=${SHARDS:-16}
start=$(date +%s)
for i in $(seq 0 $((N-1))); do
  (./moeoracle compare --shapes "$shapes" --seeds "$seeds" --shard "$i/$N" "$@" 2>&1 | grep -E "^(FAIL|WARN)|passed, .* failed|error" | head -200 > "$OUT/${name}_$i.txt") &
done
wait
end=$(date +%s)
python3 - "$OUT" "$name" "$N" "$((end-start))" "$shapes" "$seeds" <<'PY'
import re, sys
out, name, n, secs, shapes, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
tot = [0, 0, 0]; bad = []
for i in range(n):
    t = open(f"{out}/{name}_{i}.txt").read()
    m = re.findall(r"(\d+) passed, (\d+) failed, (\d+) skipped", t)
    if not m: print("shard", i, "no summary:", t[-400:]); continue
    for k in range(3): tot[k] += int(m[-1][k])
    bad += [l for l in t.splitlines() if l.startswith(("FAIL", "WARN"))]
print(f"{name}: --shapes {shapes} --seeds {seeds}: {tot[0]} passed, {tot[1]} failed, {tot[2]} skipped in {secs} s ({n} shards)")
for l in bad[:20]: print("  ", l[:300])
PY
