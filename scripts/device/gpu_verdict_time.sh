#!/usr/bin/env bash
# Time to verdict on the GPU machine: `compare` of one remainder seed, and of one seed of every
# shape, in one process (--no-isolate) and isolated (the default), for each binary given, in
# rounds (A B A B) so that both see the same machine state. Prints one line a run and keeps the
# summary lines; the binaries must pass the same cases.
# Usage: gpu_verdict_time.sh ROUNDS BIN...
cd "$(dirname "$0")"
rounds=$1; shift
for round in $(seq 1 "$rounds"); do
  for bin in "$@"; do
    for shapes in remainders all; do
      for mode in --no-isolate ""; do
        start=$EPOCHREALTIME
        summary=$("./$bin" compare --shapes "$shapes" --seed 1 --seeds 1 $mode 2>&1 | grep -E "passed, .* failed")
        end=$EPOCHREALTIME
        printf '%s round %s --shapes %s %s: %.2f s (%s)\n' "$bin" "$round" "$shapes" "${mode:-isolated}" \
          "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$summary"
      done
    done
  done
done
