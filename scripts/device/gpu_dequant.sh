#!/usr/bin/env bash
# ggml's dequant shaders (op dequant_ggml, y stored as f16) on the GPU machine: every shape of
# dequant_ggml on ggml's manifest (get_rows with f32 output and dequant_* with f16 output), then
# the full mutation of dequant_q4_0, dequant_q4_k, dequant_q6_k and dequant_q8_0 (remainder
# shapes, one seed, ggml's claims). ggml's shaders from devbin/ggml. Every output is tarred into
# $OUT/dequant.tar.xz (a call returns few files). DIAG: a manifest of ggml's iq4_xs entries with
# and without access checks.
set -u
. "$(dirname "$0")/unpack.sh"
m=engines/ggml-vulkan/ggml-vulkan.json
r=devbin/ggml
w=$(mktemp -d)
s=$(date +%s)
moeoracle compare --kernels $m --kernels-root $r --ops dequant_ggml --shapes all --jobs 8 > $w/compare.txt 2>&1
echo "compare dequant_ggml: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/compare.txt)"
for k in dequant_q4_0 dequant_q4_k dequant_q6_k dequant_q8_0; do
  s=$(date +%s)
  timeout 100 moeoracle mutate --kernels $m --kernels-root $r --kernel $k \
    --equivalent engines/ggml-vulkan/equivalent.json --shapes remainders --seeds 1 --jobs 15 \
    --timeout-ms 10000 --json $w/mutate-$k.json > $w/mutate-$k.txt 2>&1
  echo "mutate $k: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/mutate-$k.txt)"
done
# ggml's iq4_xs entries with and without access checks (DIAG): the checked pipeline NVIDIA does
# not build must now fail its cases as a plan error, not as a dying worker.
if [ -n "${DIAG:-}" ]; then
  moeoracle compare --kernels $DIAG --kernels-root $r --ops matvec_ggml,dequant_ggml --shapes remainders --jobs 8 > $w/iq4xs.txt 2>&1
  echo "iq4_xs: rc $? $(tail -1 $w/iq4xs.txt); $(grep -c 'could not build the pipeline' $w/iq4xs.txt) plan errors, $(grep -c 'worker died' $w/iq4xs.txt) worker deaths"
fi
tar -C $w -cJf "$OUT/dequant.tar.xz" .
