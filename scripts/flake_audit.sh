#!/usr/bin/env bash
# The flake audit: the whole CTest suite N times under load, cycling lavapipe's subgroup size
# (LP_NATIVE_VECTOR_WIDTH 256 -> 8, 128 -> 4, 512 -> 16), and a record of every test that failed
# even once. A test whose verdict depends on timing or load shows up here; it is then fixed, never
# retried into green.
#
#   scripts/flake_audit.sh [N] [RECORD.md]     N runs (default 10); the record (default stdout)
#
# Load: CTest runs 2 x nproc tests at once and nproc / 2 (at least one) busy loops run beside it
# at the same priority, so every test gets well under a core and timings stretch 2-3x.
# MOE_AUDIT_JOBS and MOE_AUDIT_HOGS override the two. Mesa's shader cache is off
# (MESA_SHADER_CACHE_DISABLE): every lavapipe compile is cold, as on a fresh CI machine, where a
# warm cache from earlier runs would hide a compile's cost (records/runs/
# 2026-12-07-compile-first-and-pch.md). Needs a build with tests in ./build
# (scripts/build.sh -DMOE_BUILD_TESTS=ON -DMOE_BUILD_BENCH=ON); it builds nothing itself.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
record=${2:-/dev/stdout}
jobs=${MOE_AUDIT_JOBS:-$(( 2 * $(nproc) ))}
hogs=${MOE_AUDIT_HOGS:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}
widths=(256 128 512)
[ -f build/CTestTestfile.cmake ] || { echo "flake_audit.sh: no build/CTestTestfile.cmake: build with tests first" >&2; exit 2; }
log_dir=$(mktemp -d)
hog_pids=()
stop_hogs() { for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null; done; hog_pids=(); }
trap 'stop_hogs; rm -rf "$log_dir"' EXIT

declare -A failures=()  # test name -> "run/width ..."; initialised: an empty array is unset under set -u
rows=()
for ((i = 1; i <= runs; ++i)); do
  w=${widths[$(( (i - 1) % 3 ))]}
  for ((h = 0; h < hogs; ++h)); do (while :; do :; done) & hog_pids+=($!); done
  start=$(date +%s)
  (cd build && MESA_SHADER_CACHE_DISABLE=true LP_NATIVE_VECTOR_WIDTH=$w ctest -j"$jobs" --timeout 900 --output-on-failure >"$log_dir/run$i.log" 2>&1)
  rc=$?
  stop_hogs
  secs=$(( $(date +%s) - start ))
  summary=$(grep -E '^[0-9]+% tests passed' "$log_dir/run$i.log" || echo "no summary (ctest exit $rc)")
  failed=$(sed -n '/The following tests FAILED:/,$p' "$log_dir/run$i.log" | grep -E '^\s+[0-9]+ - ' |
    sed -E 's/^\s+[0-9]+ - ([^ ]+).*/\1/')
  for t in $failed; do failures[$t]+="run $i (width $w); "; done
  rows+=("| $i | $w | ${secs} s | $summary | ${failed//$'\n'/, } |")
  echo "flake_audit: run $i/$runs, LP_NATIVE_VECTOR_WIDTH=$w: $summary, ${secs} s" >&2
  # The evidence, kept for the fix: the failing tests' output, and every test's (CTest's log).
  [ -z "$failed" ] || { cp "$log_dir/run$i.log" "build/flake_audit_run$i.log";
    cp build/Testing/Temporary/LastTest.log "build/flake_audit_run$i.full.log"; }
done

{
  echo "# Flake audit: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"
  echo
  echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "- Vulkan: $(build/cli/moeoracle devices 2>/dev/null | head -1 || echo 'no device')"
  echo "- load: ctest -j$jobs with $hogs busy loop(s) beside it; $runs runs, widths cycling ${widths[*]}; Mesa's shader cache off"
  echo
  echo "| run | LP_NATIVE_VECTOR_WIDTH | wall | result | failed |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  if ((${#failures[@]} == 0)); then
    echo "No test failed in any run."
  else
    echo "Tests that failed at least once (logs kept as build/flake_audit_run*.log):"
    for t in "${!failures[@]}"; do echo "- $t: ${failures[$t]}"; done
  fi
} >"$record"
((${#failures[@]} == 0))
