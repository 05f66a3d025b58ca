#!/usr/bin/env bash
# The GPU-machine record of this session: devices, every bundled kernel over 1000 seeds of the
# remainder shapes, the model-level differential (tiny fixture and the a3b-2layers real-shape
# preset, both modes), the compare tests with their planted bugs, real shapes over 50 seeds.
cd "$(dirname "$0")"
[ -f bin.tar.xz ] && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$PWD/lib
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$(cd .. && pwd)" /work/main; }
date -u
./moeoracle devices | head -3
timeout 150 ./gpu_seeds.sh rem remainders 1000
m=/tmp/models; mkdir -p $m
./moeoracle fixture --preset tiny --out $m/tiny --seed 7 > /dev/null
toks=1,17,42,300,7,511,256,99,3,64,128,200
for mode in isolated free; do
  timeout 60 ./moeoracle bisect --model $m/tiny --tokens $toks --prefill 4 --mode $mode --html $OUT/tiny_$mode.html 2>/dev/null | tail -3
done
start=$(date +%s); timeout 120 ./moeoracle fixture --preset a3b-2layers --out $m/a3b --seed 7 > /dev/null; echo "a3b fixture: $(( $(date +%s) - start )) s"
for mode in isolated free; do
  timeout 90 ./moeoracle bisect --model $m/a3b --tokens 1,17,42,300,7,99 --prefill 3 --mode $mode --html $OUT/a3b_$mode.html 2>/dev/null | tail -20
done
for t in expert_compare_test bisect_test; do
  timeout 60 ./$t --gtest_filter=-*Html* > $OUT/$t.txt 2>&1; echo "$t: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$t.txt | tr '\n' ' ')"
done
timeout 100 ./gpu_seeds.sh real real 50
date -u
