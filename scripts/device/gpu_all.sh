#!/usr/bin/env bash
# The GPU-machine record. Two sections, each sized to fit one device call (10 minutes):
#   gpu_all.sh seeds   every bundled kernel over 1000 seeds of the remainder shapes, the real
#                      shapes over many seeds (gpu_seeds.sh: whole chunks only, seeds counted)
#   gpu_all.sh model   the compare tests with their planted bugs, the model-level differential
#                      (tiny fixture and the a3b-2layers real-shape preset, both modes)
# Binaries: built here with -DMOE_NATIVE=OFF, stripped, carried as bin.tar.xz next to this script
# with lib/libspirv-cross-c-shared.so.0 (see records/device-runs.md).
cd "$(dirname "$0")"
[ -f bin.tar.xz ] && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$PWD/lib
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$(cd .. && pwd)" /work/main; }
date -u
./moeoracle devices | head -3
section=${1:-seeds}

if [ "$section" = seeds ]; then
  # One process, one seed: the per-case cost with the CPU truth, for the record.
  /usr/bin/time -f "probe: remainders, 1 seed, one process: %e s" ./moeoracle compare --shapes remainders --seeds 1 2>&1 | tail -1
  DEADLINE=${REM_DEADLINE:-300} ./gpu_seeds.sh rem remainders 1000
  DEADLINE=${REAL_DEADLINE:-150} CHUNK=5 ./gpu_seeds.sh real real 100
fi

if [ "$section" = model ]; then
  for t in compare_test lin_compare_test attn_compare_test route_compare_test expert_compare_test permute_compare_test bisect_test; do
    s=$(date +%s)
    timeout 90 ./$t --gtest_filter=-*Html* > $OUT/$t.txt 2>&1
    echo "$t: rc $? in $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$t.txt | tr '\n' ' ')"
  done
  m=/tmp/models; mkdir -p $m
  ./moeoracle fixture --preset tiny --out $m/tiny --seed 7 > /dev/null
  toks=1,17,42,300,7,511,256,99,3,64,128,200
  for mode in isolated free; do
    s=$(date +%s)
    timeout 60 ./moeoracle bisect --model $m/tiny --tokens $toks --prefill 4 --mode $mode 2>/dev/null | tail -3
    echo "tiny $mode: $(( $(date +%s) - s )) s"
  done
  s=$(date +%s); timeout 120 ./moeoracle fixture --preset a3b-2layers --out $m/a3b --seed 7 > /dev/null
  echo "a3b fixture: $(( $(date +%s) - s )) s"
  for mode in isolated free; do
    s=$(date +%s)
    timeout 120 ./moeoracle bisect --model $m/a3b --tokens 1,17,42,300,7,99 --prefill 3 --mode $mode \
      --html $OUT/a3b_$mode.html 2>/dev/null | tail -25
    echo "a3b $mode: rc ${PIPESTATUS[0]} in $(( $(date +%s) - s )) s"
  done
fi
date -u
