#!/usr/bin/env bash
# Issue 13: does a --perf figure depend on the case's position in the process? One process of
# `compare --ops matvec_q --shapes real --seeds N --perf` runs seed 1 of every real shape first,
# then seed 2, ...: the same (kernel, shape) sits at the start, the middle and the end of a
# ~20 x N case run. Run with the batched method (cold and warm runs in one submission) and with
# the method before (one submission per run, MOE_PERF_METHOD=submits), plus the batch without
# the cache flush; JSON reports (per-case times, in order) and the GPU clocks go to $OUT.
# Usage (device machine, from devbin/ with bin.tar.xz): gpu_perf_position.sh [SEEDS]
cd "$(dirname "$0")"
[ -f bin.tar.xz ] && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$PWD/lib
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
seeds=${1:-15}
out=${OUT:-/tmp}
clocks() { nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader 2>&1; }
echo "clocks before: $(clocks)"
run() {  # name, env...
  local name=$1; shift
  local t0=$(date +%s)
  env "$@" ./moeoracle compare --ops matvec_q --shapes real --seeds "$seeds" --perf --json "$out/$name.json" > "$out/$name.txt" 2>&1
  echo "== $name ($*): rc $? in $(( $(date +%s) - t0 )) s; clocks after: $(clocks)"
  grep -E "passed, .* failed" "$out/$name.txt"
  grep -E "o_proj|in_proj_qkv 12288|copy bandwidth" "$out/$name.txt" | grep -v "^PASS" | head -4
}
run batch
run submits MOE_PERF_METHOD=submits
run batch_noflush MOE_PERF_FLUSH_MB=0
