#!/usr/bin/env bash
# The GPU-machine record for the gate's strength, in one device call (~6 minutes):
#   the device's measured precision (moeoracle calibrate), a mutation sample of the bundled
#   kernels, the remainder shapes over as many seeds as fit, real shapes over a few seeds.
# Binaries as for gpu_issue10.sh (devbin/bin.tar.xz, built here with -DMOE_NATIVE=OFF).
# Limits (seconds): MUTATE_LIMIT (150), REM_DEADLINE (120), REAL_DEADLINE (40).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/devbin" && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$root/devbin/lib PATH=$root/devbin:$PATH
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cp "$root/scripts/device/gpu_seeds.sh" "$root/devbin/"
date -u
moeoracle devices | head -4
moeoracle calibrate | tee $OUT/calibrate.txt
s=$(date +%s)
timeout ${MUTATE_LIMIT:-150} moeoracle mutate --seeds 1 --shapes remainders --max-per-kernel ${MUTATE_N:-8} \
  --sample-seed 1 --jobs 12 --json $OUT/mutate.json > $OUT/mutate.txt 2> $OUT/mutate.err
echo "mutate: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/mutate.txt)"
DEADLINE=${REM_DEADLINE:-120} CHUNK=${REM_CHUNK:-20} ./gpu_seeds.sh rem remainders ${REM_SEEDS:-1000} --no-isolate
DEADLINE=${REAL_DEADLINE:-40} CHUNK=2 ./gpu_seeds.sh real real ${REAL_SEEDS:-32} --no-isolate
date -u
