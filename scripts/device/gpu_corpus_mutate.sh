#!/usr/bin/env bash
# `moeoracle mutate` of the foreign corpus' correct kernels on the GPU machine (records/mutate/
# survivors-corpus.md lists them): every shape, one seed, each manifest in turn.
# Binaries as for gpu_issue10.sh (devbin/bin.tar.xz). Writes $OUT/corpus-<manifest>.{txt,json}.
# LIMIT (default 150 s per manifest) stops mutate (SIGTERM): it then reports what finished.
set -u
. "$(dirname "$0")/unpack.sh"
declare -A kernels=(
  [ggml]=ggml_rms_norm_mul,ggml_rope_neox,ggml_mul_mat_vec_q4_split_k,ggml_split_k_reduce
  [layouts]=vk_attn_scores_decode_head_major,vk_gated_norm_scratch,vk_kv_append_head_major,vk_linear_qk_norm_inplace_a3b,vk_moe_combine_decode_k8
  [vk_engine]=vk_dequant_matvec_q4,vk_residual_add_vec4)
for m in ${MANIFESTS:-ggml layouts vk_engine}; do
  s=$(date +%s)
  timeout ${LIMIT:-150} moeoracle mutate --kernels tests/foreign/$m.json --kernel "${kernels[$m]}" --shapes all \
    --seeds 1 --jobs ${JOBS:-15} --timeout-ms 10000 --equivalent tests/foreign/equivalent.json \
    --json $OUT/corpus-$m.json > $OUT/corpus-$m.txt 2> $OUT/corpus-$m.err
  echo "corpus $m: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/corpus-$m.txt)"
done
