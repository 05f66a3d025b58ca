#!/usr/bin/env bash
# `moeoracle mutate` on the GPU machine, one slice of the bundled kernels per device call (each
# call has a 600 s limit): remainder shapes, one seed, every subgroup size the device offers.
# Binaries as for gpu_issue10.sh (devbin/bin.tar.xz, built here with -DMOE_NATIVE=OFF).
# Usage: gpu_mutate.sh NAME KERNELS [mutate args...]   (KERNELS comma-separated, or "all")
# Writes $OUT/mutate-NAME.txt (console report) and $OUT/mutate-NAME.json. LIMIT (default 540 s)
# stops mutate (SIGTERM) before the call's limit: it then reports the mutants that finished.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
name=$1 kernels=$2; shift 2
cd "$root/devbin" && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$root/devbin/lib PATH=$root/devbin:$PATH
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
sel=(--kernel "$kernels"); [ "$kernels" = all ] && sel=()
timeout ${LIMIT:-540} moeoracle mutate "${sel[@]}" --shapes remainders --seeds 1 --jobs ${JOBS:-15} \
  --json $OUT/mutate-$name.json "$@" > $OUT/mutate-$name.txt 2> $OUT/mutate-$name.err
echo "mutate $name: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/mutate-$name.txt)"
