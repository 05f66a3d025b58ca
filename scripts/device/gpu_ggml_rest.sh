#!/usr/bin/env bash
# ggml's quantized shaders not yet mutated on NVIDIA: the dequant shaders of q4_1, q5_0, q5_1 and
# q3_K and the subgroup mul_mat_vec of q4_1 (remainder shapes, one seed, ggml's claims), then a
# DeepSeek-V3 GGUF (devbin/ds3-tiny.gguf, `fixture --preset ds3-tiny --format gguf`) bisected on
# ggml's kernels. ggml's shaders from devbin/ggml. Outputs tarred into $OUT/rest.tar.xz.
# LIMIT: seconds per mutation run (default 90).
set -u
. "$(dirname "$0")/unpack.sh"
m=engines/ggml-vulkan/ggml-vulkan.json
r=devbin/ggml
w=$(mktemp -d)
for k in dequant_q4_1 dequant_q5_0 dequant_q5_1 dequant_q3_k mul_mat_vec_q4_1_f32_f32_subgroup; do
  s=$(date +%s)
  timeout "${LIMIT:-90}" moeoracle mutate --kernels $m --kernels-root $r --kernel $k \
    --equivalent engines/ggml-vulkan/equivalent.json --shapes remainders --seeds 1 --jobs 15 \
    --timeout-ms 10000 --json $w/mutate-$k.json > $w/mutate-$k.txt 2>&1
  echo "mutate $k: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/mutate-$k.txt)"
done
if [ -f devbin/ds3-tiny.gguf ]; then
  s=$(date +%s)
  moeoracle bisect --model devbin/ds3-tiny.gguf --tokens 5,9,300 --kernels $m --kernels-root $r \
    > $w/bisect-ds3.txt 2>&1
  echo "bisect ds3-tiny.gguf on ggml: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/bisect-ds3.txt)"
fi
tar -C $w -cJf "$OUT/rest.tar.xz" .
