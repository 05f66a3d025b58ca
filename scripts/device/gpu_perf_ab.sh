#!/usr/bin/env bash
# A/B timing of kernels on the GPU machine: the bundled kernels against another manifest (e.g. the
# previous GLSL of a kernel under a new name), same binary, alternating A B A B, each run a fresh
# `compare --perf` process over the same seeds, so both sides see the same case positions
# (records/benchmarks-history.md, "The first-use effect of 2026-11-22", says why positions mattered
# on NVIDIA). Prints the perf lines and the per-seed times of every case.
# Usage: gpu_perf_ab.sh OPS MANIFEST_B [SEEDS] [SHAPES]
cd "$(dirname "$0")"
[ -f bin.tar.xz ] && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$PWD/lib
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$(cd .. && pwd)" /work/main; }
ops=$1 b=$2 seeds=${3:-3} shapes=${4:-real}
for rep in 1 2; do
  for k in bundled "$b"; do
    echo "== run $rep, kernels $k"
    ./moeoracle compare --ops "$ops" --shapes "$shapes" --perf --seeds "$seeds" --kernels "$k" > /tmp/ab.txt 2>&1
    grep -E "passed, .* failed|rror" /tmp/ab.txt
    grep -E "^PASS" /tmp/ab.txt | sed -E 's/^PASS +([^ ]+) +([^ ]+) +(\[[^]]*\]) +(seed=[0-9]+).* ([0-9.e+-]+) ms .*/\2 \3 \4 \5 ms/'
    sed -n '/^perf/,$p' /tmp/ab.txt
  done
done
