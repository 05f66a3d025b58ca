#!/usr/bin/env bash
# ggml's mul_mat_vec shaders (engines/ggml-vulkan, op matvec_ggml) on the GPU machine: compare at
# SHAPES (default all), seeds FIRST.. FIRST+SEEDS-1 (default 1, 1); then `mutate` of each kernel in
# MUTATE (comma-separated; default the q4_K, q6_K, q4_0 and q8_0 matvecs NVIDIA picks), remainder
# shapes, one seed, each cut at LIMIT s (default 150). ggml's shaders from devbin/ggml (its
# src/ggml-vulkan/vulkan-shaders, never committed here). Writes $OUT/mmv-*.{txt,json}.
set -u
. "$(dirname "$0")/unpack.sh"
m=engines/ggml-vulkan/ggml-vulkan.json
s=$(date +%s)
moeoracle compare --kernels $m --kernels-root devbin/ggml --ops matvec_ggml --shapes ${SHAPES:-all} \
  --seed ${FIRST:-1} --seeds ${SEEDS:-1} --jobs ${JOBS:-8} --json $OUT/mmv-compare.json > $OUT/mmv-compare.txt 2>&1
echo "compare: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/mmv-compare.txt)"
kernels=${MUTATE:-mul_mat_vec_q4_k_f32_f32_subgroup,mul_mat_vec_q6_k_f32_f32_subgroup,mul_mat_vec_q4_0_f32_f32_subgroup,mul_mat_vec_q8_0_f32_f32_subgroup}
for k in ${kernels//,/ }; do
  s=$(date +%s)
  timeout ${LIMIT:-150} moeoracle mutate --kernels $m --kernels-root devbin/ggml --kernel $k \
    --equivalent engines/ggml-vulkan/equivalent.json --shapes remainders --seeds 1 --jobs ${JOBS:-15} \
    --timeout-ms 10000 --json $OUT/mmv-mutate-$k.json > $OUT/mmv-mutate-$k.txt 2> $OUT/mmv-mutate-$k.err
  echo "mutate $k: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/mmv-mutate-$k.txt)"
done
