#!/usr/bin/env bash
# Many seeds on the GPU machine. The seeds are cut into chunks of CHUNK (default 25) consecutive
# seeds; WORKERS (default 16) `moeoracle compare` processes take chunks from a queue. Each gets
# cores / WORKERS OpenMP threads (OMP_NUM_THREADS, unless set): 16 workers that each started 16
# threads spun against one another building the f64 truths, 8x slower in all (records/device-runs.md,
# 2026-11-27 23:22; records/benchmarks-history.md, "Why the seed records were slow"). A chunk is
# started only before DEADLINE seconds (default 240) have passed, so a call's time limit never cuts
# a chunk in half: the summary counts only whole chunks and names the seeds they covered. Keeps the
# summary, FAIL and WARN lines of each chunk.
# Usage: gpu_seeds.sh NAME SHAPES SEEDS [compare args...]
cd "$(dirname "$0")"
name=$1 shapes=$2 seeds=$3; shift 3
W=${WORKERS:-16} C=${CHUNK:-25} D=${DEADLINE:-240} first=${FIRST_SEED:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / W > 0 ? $(nproc) / W : 1 ))}
dir=$OUT/$name; mkdir -p "$dir"
start=$(date +%s)
chunks=$(( (seeds + C - 1) / C ))
seq 0 $((chunks - 1)) | xargs -P "$W" -I{} bash -c '
  k=$1; shift; name=$1 shapes=$2 seeds=$3 C=$4 D=$5 start=$6 first=$7 dir=$8; shift 8
  [ $(( $(date +%s) - start )) -lt "$D" ] || exit 0
  s=$(( first + k * C )); n=$C
  [ $(( k * C + n )) -le "$seeds" ] || n=$(( seeds - k * C ))
  ./moeoracle compare --shapes "$shapes" --seed "$s" --seeds "$n" "$@" 2>&1 |
    grep -E "^(FAIL|WARN)|passed, .* failed|rror" | head -100 > "$dir/$k.tmp"
  echo "seeds $s..$(( s + n - 1 ))" >> "$dir/$k.tmp"; mv "$dir/$k.tmp" "$dir/$k.txt"
' _ {} "$name" "$shapes" "$seeds" "$C" "$D" "$start" "$first" "$dir" "$@"
end=$(date +%s)
python3 - "$dir" "$name" "$((end-start))" "$shapes" "$seeds" "$W" "$*" <<'PY'
import glob, re, sys
d, name, secs, shapes, seeds, w, extra = sys.argv[1:8]
tot = [0, 0, 0]; bad = []; ranges = []; broken = []
for f in sorted(glob.glob(d + "/*.txt"), key=lambda p: int(p.split("/")[-1][:-4])):
    t = open(f).read()
    m = re.findall(r"(\d+) passed, (\d+) failed, (\d+) skipped", t)
    r = re.search(r"seeds (\d+)\.\.(\d+)", t)
    if not m: broken.append(f + ": " + t[-300:]); continue
    for k in range(3): tot[k] += int(m[-1][k])
    ranges.append((int(r.group(1)), int(r.group(2))))
    bad += [l for l in t.splitlines() if l.startswith(("FAIL", "WARN"))]
covered = sum(b - a + 1 for a, b in ranges)
print(f"{name}: --shapes {shapes} {extra} seeds covered {covered}/{seeds}: "
      f"{tot[0]} passed, {tot[1]} failed, {tot[2]} skipped in {secs} s ({w} workers)")
for b in broken: print("  no summary:", b)
for l in bad[:20]: print("  ", l[:300])
if bad: open(f"{d}/../{name}_fails.txt", "w").write("\n".join(bad) + "\n")
PY
rm -rf "$dir"
