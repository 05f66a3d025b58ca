#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan, into ./build-fuzz) and runs each for
# SECONDS (default 30) on its committed corpus fuzz/corpus/<format> with its dictionary. New
# inputs go to a scratch copy, never into the committed corpus. Any crash, leak, sanitizer
# report, timeout (> 10 s on one input) or OOM (> 2 GiB) fails the script; the input is kept as
# build-fuzz/findings/<format>-crash-... (docs/fuzzing.md says how to replay it).
# Usage: scripts/fuzz.sh [SECONDS] [FORMAT ...]     (default: every fuzz/<format>_fuzz.cpp)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
bash scripts/install-deps.sh --fuzz
bash scripts/install-deps.sh
jobs=${MOE_JOBS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOE_BUILD_TESTS=OFF \
  -DMOE_BUILD_BENCH=OFF -DMOE_BUILD_PYTHON=OFF -DMOE_NATIVE=OFF -DMOE_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_all

formats=("$@")
if ((${#formats[@]} == 0)); then
  for f in fuzz/*_fuzz.cpp; do formats+=("$(basename "$f" _fuzz.cpp)"); done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p build-fuzz/findings build-fuzz/fuzz-logs
# One OpenMP thread: the fixtures' forward must not take the other core of a 2-core runner.
export OMP_NUM_THREADS=1
failed=()
for f in "${formats[@]}"; do
  mkdir -p "$work/$f"
  log=build-fuzz/fuzz-logs/$f.log
  echo "== $f: ${secs} s"
  if build-fuzz/fuzz/"${f}"_fuzz -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -dict=fuzz/"$f".dict -artifact_prefix=build-fuzz/findings/"$f"- "$work/$f" fuzz/corpus/"$f" >"$log" 2>&1; then
    grep -E "DONE|^stat::number_of_executed_units|^stat::average_exec_per_sec" "$log" | tr '\n' ' '
    echo
  else
    failed+=("$f")
    echo "FAILED (log: $log)"
    grep -E "ERROR|runtime error|invariant|Test unit written" "$log" | head -5 || true
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#formats[@]} harnesses, ${secs} s each, no findings"
