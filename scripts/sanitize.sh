#!/usr/bin/env bash
# The test suite under sanitizers (docs/sanitizers.md). Configures, builds and runs CTest with the
# presets of CMakePresets.json, each in its own build directory, and prints a summary.
#
#   scripts/sanitize.sh asan      AddressSanitizer + LeakSanitizer + UBSan (clang 14), every test  build-asan-clang
#   scripts/sanitize.sh asan-gcc  the same with GCC 12 (several times slower to compile here)  build-asan
#   scripts/sanitize.sh tsan      ThreadSanitizer (clang 14, LLVM OpenMP + archer), every test build-tsan
#   scripts/sanitize.sh kernels   the CI-sized part: kernels_cpu and its tests under asan      build-asan-kernels
#   scripts/sanitize.sh all       asan, then tsan
#
# Arguments after the first go to ctest (e.g. -R 'kernels\.'). MOE_JOBS sets the build and test jobs.
# Exit code: 0 when every configuration built and passed, 1 otherwise, 2 for bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
shift || true
case "$what" in
  asan) configs=(asan-clang) ;;
  asan-gcc) configs=(asan) ;;
  tsan) configs=(tsan) ;;
  kernels) configs=(asan-kernels) ;;
  all) configs=(asan-clang tsan) ;;
  *) echo "usage: scripts/sanitize.sh [asan|asan-gcc|tsan|kernels|all] [ctest arguments...]" >&2; exit 2 ;;
esac

deps=()
[[ "$what" == kernels ]] || deps+=(--test)  # the full suite renders the HTML report in chromium
[[ "$what" == tsan || "$what" == asan || "$what" == all ]] && deps+=(--tsan)  # clang 14
bash scripts/install-deps.sh "${deps[@]}"

# As scripts/build.sh: at most 4 jobs; an instrumented compile needs about 1.5x the memory.
jobs=${MOE_JOBS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}
mkdir -p build-logs
summary=()
status=0
for c in "${configs[@]}"; do
  log=build-logs/sanitize-$c.log
  start=$(date +%s)
  echo "== $c: configure and build (log: $log)"
  if ! { cmake --preset "$c" && cmake --build --preset "$c" -j"$jobs"; } >"$log" 2>&1; then
    tail -n 30 "$log"
    summary+=("$c: BUILD FAILED after $(( $(date +%s) - start )) s (see $log)")
    status=1
    continue
  fi
  built=$(date +%s)
  echo "== $c: ctest"
  rc=0
  ctest --preset "$c" -j"$jobs" "$@" 2>&1 | tee -a "$log" || rc=$?
  # ctest's own closing line: "N% tests passed, F tests failed out of M".
  line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1 || true)
  summary+=("$c: ${line:-no test result (rc $rc)}; build $(( built - start )) s, tests $(( $(date +%s) - built )) s")
  [[ $rc -eq 0 && -n "$line" ]] || status=1
done

echo
echo "== sanitizer summary ($(date -u +%F), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
for s in "${summary[@]}"; do echo "   $s"; done
exit $status
