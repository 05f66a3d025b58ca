#!/usr/bin/env bash
# The shipped engine manifests (engines/) on the GPU machine: ggml's Vulkan shaders and
# flash-moe-vulkan's, each from the checkout carried in devbin/ (devbin/ggml: ggml's
# src/ggml-vulkan/vulkan-shaders; devbin/fmv: flash-moe-vulkan's vulkan_infer/shaders — the
# engines' own files, never committed here). SEEDS seeds (default 3) of every shape; then
# `mutate` of the ggml kernels named in MUTATE (default none), one seed, remainders.
# Binaries as for gpu_issue10.sh (devbin/bin.tar.xz). Writes $OUT/engines-*.{txt,json}.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/devbin" && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$root/devbin/lib PATH=$root/devbin:$PATH
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cd "$root"
for e in ggml-vulkan:ggml flash-moe-vulkan:fmv; do
  m=${e%%:*} src=${e##*:}
  s=$(date +%s)
  moeoracle compare --kernels engines/$m/$m.json --kernels-root devbin/$src --shapes all --seeds ${SEEDS:-3} \
    --json $OUT/engines-$m.json > $OUT/engines-$m.txt 2>&1
  echo "$m: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/engines-$m.txt)"
done
if [ -n "${MUTATE:-}" ]; then
  s=$(date +%s)
  timeout ${LIMIT:-300} moeoracle mutate --kernels engines/ggml-vulkan/ggml-vulkan.json --kernels-root devbin/ggml \
    --kernel "$MUTATE" --shapes remainders --seeds 1 --jobs ${JOBS:-15} --timeout-ms 10000 \
    --json $OUT/engines-mutate.json > $OUT/engines-mutate.txt 2> $OUT/engines-mutate.err
  echo "mutate: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/engines-mutate.txt)"
fi
