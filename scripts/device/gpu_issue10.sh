#!/usr/bin/env bash
# The GPU-machine record for foreign kernels (isolated workers, engine layouts, device-sized
# workgroups, decode and tiling-limit cases) and for mutation testing. Sections, each sized for
# one device call (10 minutes):
#   tests     the compare tests (planted bugs, layouts, isolation)
#   seeds     the bundled remainder shapes over 1000 seeds
#   real      real shapes over 100 seeds, the foreign corpus, a mutation sample
# Binaries: built here with -DMOE_NATIVE=OFF (build-dev), stripped, carried as devbin/bin.tar.xz
# with lib/libspirv-cross-c-shared.so.0. Test binaries look for the sources at /work/main and the
# CLI at /work/main/build-dev/cli/moeoracle: both are linked to this copy of the tree.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/devbin" && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$root/devbin/lib PATH=$root/devbin:$PATH
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }
mkdir -p "$root/build-dev/cli" && ln -sf "$root/devbin/moeoracle" "$root/build-dev/cli/moeoracle"
cp "$root/scripts/device/gpu_seeds.sh" "$root/devbin/"
date -u
moeoracle devices | head -4
section=${1:-tests}

if [ "$section" = tests ]; then
  for t in ${TESTS:-layout_compare_test isolation_test compare_test lin_compare_test attn_compare_test \
           route_compare_test expert_compare_test permute_compare_test runner_test}; do
    s=$(date +%s)
    timeout 120 ./$t > $OUT/$t.txt 2>&1
    echo "$t: rc $? in $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$t.txt | tr '\n' ' ')"
  done
fi

if [ "$section" = seeds ]; then
  # Our own kernels: one process per chunk of seeds, no workers (the record is about their numbers).
  DEADLINE=${REM_DEADLINE:-420} ./gpu_seeds.sh rem remainders 1000 --no-isolate
fi

if [ "$section" = real ]; then
  DEADLINE=${REAL_DEADLINE:-150} CHUNK=5 ./gpu_seeds.sh real real 100 --no-isolate
  for m in "$root"/tests/foreign/*.json; do
    timeout 120 moeoracle compare --kernels "$m" --shapes all --seeds 3 > $OUT/corpus_$(basename $m .json).txt 2>&1
    echo "corpus $(basename $m): rc $?: $(tail -1 $OUT/corpus_$(basename $m .json).txt)"
  done
  [ -x ./foreign_corpus_test ] && { timeout 200 ./foreign_corpus_test > $OUT/foreign_corpus_test.txt 2>&1;
    echo "foreign_corpus_test: rc $?: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/foreign_corpus_test.txt | tr '\n' ' ')"; }
  s=$(date +%s)
  timeout ${MUTATE_LIMIT:-200} moeoracle mutate --seeds 1 --shapes all --max-per-kernel ${MUTATE_N:-20} --jobs 8 \
    --json $OUT/mutate.json > $OUT/mutate.txt 2>&1
  echo "mutate: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/mutate.txt)"
fi
date -u
