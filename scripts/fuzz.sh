#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan, into ./build-fuzz or $MOE_FUZZ_BUILD) and
# runs each for SECONDS (default 30) on its committed corpus fuzz/corpus/<format> with its dictionary. New
# inputs go to a scratch copy, never into the committed corpus. Any crash, leak, sanitizer
# report, timeout (> 10 s on one input) or OOM (> 2 GiB) fails the script; the input is kept as
# build-fuzz/findings/<format>-crash-... (docs/fuzzing.md says how to replay it).
# Usage: scripts/fuzz.sh [--quick] [SECONDS] [FORMAT ...]   (default: every format: fuzz/<format>.dict);
# nproc harnesses (at most 4) at a time.
# --quick: the file formats that need no model (safetensors, tap_map, dump_diff, tokens, gguf), built
# from the few sources they read (fuzz_files_all: about a minute on 2 cores) — what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
build=${MOE_FUZZ_BUILD:-build-fuzz}  # the build directory
if [[ "${1:-}" == "--quick" ]]; then quick=1; shift; fi
secs=${1:-30}
shift || true
bash scripts/install-deps.sh --fuzz

jobs=${MOE_JOBS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOE_BUILD_TESTS=OFF \
  -DMOE_BUILD_BENCH=OFF -DMOE_BUILD_PYTHON=OFF -DMOE_NATIVE=OFF -DMOE_FUZZ=ON >/dev/null
suffix=""
formats=("$@")
if ((quick)); then
  cmake --build "$build" -j"$jobs" --target fuzz_files_all
  suffix=_files
  ((${#formats[@]})) || formats=(safetensors tap_map dump_diff tokens gguf)
else
  cmake --build "$build" -j"$jobs" --target fuzz_all
fi
if ((${#formats[@]} == 0)); then
  for f in fuzz/*.dict; do formats+=("$(basename "$f" .dict)"); done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build"/findings "$build"/fuzz-logs
# One OpenMP thread: the fixtures' forward must not take the other core of a 2-core runner.
export OMP_NUM_THREADS=1
# The harnesses run $jobs at a time (each is one process, one thread); each one's lines are printed
# when it ends, in the order given.
fuzz_one() {  # FORMAT: runs it; the report in $work/FORMAT.out, exit status that of the harness
  local f=$1 log="$build"/fuzz-logs/$1.log
  mkdir -p "$work/$f"
  {
    echo "== $f: ${secs} s"
    if "$build"/fuzz/"${f}"_fuzz$suffix -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
         -dict=fuzz/"$f".dict -artifact_prefix="$build"/findings/"$f"- "$work/$f" fuzz/corpus/"$f" >"$log" 2>&1; then
      grep -E "DONE|^stat::number_of_executed_units|^stat::average_exec_per_sec" "$log" | tr '\n' ' '
      echo
    else
      echo "FAILED (log: $log)"
      grep -E "ERROR|runtime error|invariant|Test unit written" "$log" | head -5 || true
      return 1
    fi
  } >"$work/$f.out"
}
failed=()
for ((i = 0; i < ${#formats[@]}; i += jobs)); do
  batch=("${formats[@]:i:jobs}")
  pids=()
  for f in "${batch[@]}"; do fuzz_one "$f" & pids+=($!); done
  for k in "${!batch[@]}"; do
    wait "${pids[$k]}" || failed+=("${batch[$k]}")
    cat "$work/${batch[$k]}.out"
  done
done
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#formats[@]} harnesses, ${secs} s each, no findings"
