#!/usr/bin/env bash
# judge's calibration and false-alarm run: the bundled (or a manifest's) Vulkan kernels run a model
# on their own outputs (`bisect --mode free --dump`), and `judge` holds that dump to the truth module
# by module. One line per token seed: the seed, bisect's and judge's verdicts, judge's worst
# error / bound and the module it was at. Tokens per seed: TOKENS (default 8) ids below VOCAB
# (default 256), drawn with awk's srand(seed).
# Usage: scripts/judge_seeds.sh MOEORACLE MODEL FIRST LAST [bisect options...]
set -u
cli=$1 model=$2 first=$3 last=$4
shift 4
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
for s in $(seq "$first" "$last"); do
  toks=$(awk -v s="$s" -v n="${TOKENS:-8}" -v v="${VOCAB:-256}" \
    'BEGIN { srand(s); for (i = 0; i < n; ++i) printf "%s%d", (i ? "," : ""), int(rand() * v) }')
  "$cli" bisect --model "$model" --tokens "$toks" --mode free --dump "$w/d.safetensors" --case-out "$w/case" "$@" \
    > "$w/bisect.txt" 2>&1
  b=$?
  "$cli" judge "$w/d.safetensors" --model "$model" --json "$w/j.json" > "$w/judge.txt" 2>&1
  j=$?
  worst=$(python3 -c "import json; m = max(json.load(open('$w/j.json'))['modules'], key=lambda m: float(m['worst_ratio'])); print(m['worst_ratio'], m['tap'])" 2>/dev/null)
  echo "seed $s bisect rc $b judge rc $j worst $worst"
  [ $j -ne 0 ] && tail -1 "$w/judge.txt"
done
