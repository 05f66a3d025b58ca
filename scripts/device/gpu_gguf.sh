#!/usr/bin/env bash
# GGUF on the GPU machine (issue 36): PART 1 judges ggml's get_rows (op dequant_ggml) at every
# shape, bisects the tiny fixture written as GGUF on ggml's kernels (isolated and free), and runs
# the full mutation of the q4_0 matvec and half of the q4_K one; PART 2 the other half of q4_K and
# the get_rows / q8_0 / q6_K mutations; PART 3 the rest of those and the iq4_xs pipelines without
# access checks (DIAG: a manifest of such entries). ggml's shaders from devbin/ggml. Shards count
# from 0. Every output is tarred
# into $OUT/gguf-part$PART.tar.xz (a call returns few files).
set -u
. "$(dirname "$0")/unpack.sh"
m=engines/ggml-vulkan/ggml-vulkan.json
r=devbin/ggml
w=$(mktemp -d)
mutate() {  # kernel, shard ("" for all), time limit
  local s=$(date +%s) tag=$1${2:+-${2//\//of}}
  timeout $3 moeoracle mutate --kernels $m --kernels-root $r --kernel $1 ${2:+--shard $2} \
    --equivalent engines/ggml-vulkan/equivalent.json --shapes remainders --seeds 1 --jobs 15 \
    --timeout-ms 10000 --json $w/mutate-$tag.json > $w/mutate-$tag.txt 2>&1
  echo "mutate $tag: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/mutate-$tag.txt)"
}
if [ "${PART:-1}" = 3 ]; then
  if [ -n "${DIAG:-}" ]; then
    moeoracle compare --kernels $DIAG --kernels-root $r --ops matvec_ggml,dequant_ggml --shapes remainders --jobs 8 > $w/iq4xs-nochecks.txt 2>&1
    echo "iq4_xs without access checks: rc $? $(tail -1 $w/iq4xs-nochecks.txt)"
  fi
  mutate mul_mat_vec_q4_k_f32_f32_subgroup 0/2 160
  mutate mul_mat_vec_q6_k_f32_f32_subgroup 0/2 80
  mutate mul_mat_vec_q8_0_f32_f32_subgroup "" 260
elif [ "${PART:-1}" = 1 ]; then
  s=$(date +%s)
  moeoracle compare --kernels $m --kernels-root $r --ops dequant_ggml --shapes all --jobs 8 > $w/getrows.txt 2>&1
  echo "get_rows: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/getrows.txt)"
  moeoracle fixture --preset tiny --format gguf --seed 3 --out $w/tiny.gguf > /dev/null
  for mode in isolated free; do
    s=$(date +%s)
    moeoracle bisect --model $w/tiny.gguf --tokens 5,9,300,17,2,44,8,100 --prefill 4 --mode $mode --kernels $m \
      --kernels-root $r --json $w/bisect-$mode.json > $w/bisect-$mode.txt 2>&1
    echo "bisect $mode: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/bisect-$mode.txt)"
  done
  mutate mul_mat_vec_q4_0_f32_f32_subgroup "" 250
  mutate mul_mat_vec_q4_k_f32_f32_subgroup 1/2 200
else
  mutate mul_mat_vec_q4_k_f32_f32_subgroup 0/2 200
  mutate get_rows_q4_k_f32 "" 100
  mutate mul_mat_vec_q8_0_f32_f32_subgroup "" 120
  mutate mul_mat_vec_q6_k_f32_f32_subgroup 1/2 120
fi
tar -C $w -cJf $OUT/gguf-part${PART:-1}.tar.xz --exclude tiny.gguf .
