#!/usr/bin/env bash
# Mutation of the engine manifests on the GPU machine in steps "NAME:LIMIT" run one after another
# (LIMIT seconds each); after each step every result so far is packed into $OUT/res.tar.xz, so a
# call's time limit loses only the step it cuts (a call brings back 8 files at most). Steps:
#   g_<list>  ggml mutants listed in devbin/nr_<list>.txt (`kernel id` lines, from an earlier JSON
#             report's not-run or survived mutants; one source file a list), remainders
#   f_<n>     flash-moe-vulkan kernel group n (fmk below), --shapes all (its attention loops stride
#             256 positions, which only the longer shapes pass); devbin/nr_f_<n>.txt, if present,
#             limits it to those mutants
#   seeds     gpu_seeds.sh: NSEEDS (1000) remainder seeds of the bundled kernels from FIRST_SEED
# JOBS mutants at once (12). Engines' checkouts in devbin/ggml and devbin/fmv; binaries as for
# gpu_engines.sh. Usage: gpu_mutate_steps.sh STEP...
set -u
. "$(dirname "$0")/unpack.sh"
res=$(mktemp -d); t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $res/gpu.txt 2>&1
# The ggml kernels that use a list's source file (its first mutant's), as gpu_mutate_groups.sh groups them.
ggk() { case $(head -1 "devbin/nr_$1.txt" | cut -d' ' -f1) in
  gated_delta_net.comp) echo gated_delta_net_f32_clustered,gated_delta_net_f32_subgroup,gated_delta_net_f32_shmem ;;
  topk_moe.comp) echo topk_moe_early_softmax,topk_moe_late_softmax,topk_moe_sigmoid_norm_bias ;;
  l2_norm.comp) echo l2_norm_f32_q,l2_norm_f32_k,cpy_f32_f32_conv_state,ssm_conv_silu_f32 ;;
  soft_max.comp) echo soft_max_f32,soft_max_f32_f16 ;;
  rms_norm.comp) echo rms_norm_mul_f32,rms_norm_f32_q,rms_norm_f32_k ;; esac; }
fmk() { case $1 in
  1) echo rms_norm,residual_add,moe_combine,sigmoid_gate ;;
  2) echo conv1d_step,compute_decay_beta,gated_delta_net_step ;;
  3) echo rms_norm_qk,gated_rms_norm ;;
  4) echo attn_scores,attn_softmax,attn_values ;;
  5) echo fused_gate_up_swiglu ;;
  6) echo dequant_matvec_4bit ;; esac; }
for step in "$@"; do
  n=${step%%:*} lim=${step#*:}; s=$(date +%s)
  case $n in
    g_*) l=${n#g_}
      timeout $lim moeoracle mutate --kernels engines/ggml-vulkan/ggml-vulkan.json --kernels-root devbin/ggml --kernel "$(ggk $l)" \
        --equivalent engines/ggml-vulkan/equivalent.json --mutants devbin/nr_$l.txt --shapes remainders --seeds 1 --jobs ${JOBS:-12} \
        --timeout-ms 3000 --json $res/$n.json >$res/$n.txt 2>$res/$n.err ;;
    f_*) g=${n#f_}
      timeout $lim moeoracle mutate --kernels engines/flash-moe-vulkan/flash-moe-vulkan.json --kernels-root devbin/fmv --kernel "$(fmk $g)" \
        --equivalent engines/flash-moe-vulkan/equivalent.json $( [ -f devbin/nr_f_$g.txt ] && echo --mutants devbin/nr_f_$g.txt ) --shapes all --seeds 1 --jobs ${JOBS:-12} \
        --timeout-ms 3000 --json $res/$n.json >$res/$n.txt 2>$res/$n.err ;;
    seeds) OUT=$res DEADLINE=$lim CHUNK=${CHUNK:-20} FIRST_SEED=${FIRST_SEED:-1} bash "$root/devbin/gpu_seeds.sh" seeds remainders ${NSEEDS:-1000} --no-isolate > $res/seeds.txt 2>&1 ;;
  esac
  echo "$n: rc $? in $(( $(date +%s) - s )) s (at $(( $(date +%s) - t0 )) s): $(tail -1 $res/$n.txt 2>/dev/null)" | tee -a $res/steps.txt
  tar -C $res -cJf $OUT/res.tar.xz .
done
