
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/kernels_cpu/check/argmax_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/argmax_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/argmax_check.cpp.o.d"
  "/work/main/kernels_cpu/check/attention_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/attention_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/attention_check.cpp.o.d"
  "/work/main/kernels_cpu/check/conv1d_step_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/conv1d_step_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/conv1d_step_check.cpp.o.d"
  "/work/main/kernels_cpu/check/decay_beta_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/decay_beta_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/decay_beta_check.cpp.o.d"
  "/work/main/kernels_cpu/check/delta_net_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/delta_net_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/delta_net_check.cpp.o.d"
  "/work/main/kernels_cpu/check/dequant_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/dequant_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/dequant_check.cpp.o.d"
  "/work/main/kernels_cpu/check/embedding_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/embedding_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/embedding_check.cpp.o.d"
  "/work/main/kernels_cpu/check/expert_buckets_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/expert_buckets_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/expert_buckets_check.cpp.o.d"
  "/work/main/kernels_cpu/check/matmul_q_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matmul_q_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matmul_q_check.cpp.o.d"
  "/work/main/kernels_cpu/check/matvec_bf16_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matvec_bf16_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matvec_bf16_check.cpp.o.d"
  "/work/main/kernels_cpu/check/matvec_q_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matvec_q_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matvec_q_check.cpp.o.d"
  "/work/main/kernels_cpu/check/moe_combine_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/moe_combine_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/moe_combine_check.cpp.o.d"
  "/work/main/kernels_cpu/check/moe_permute_fuse_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/moe_permute_fuse_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/moe_permute_fuse_check.cpp.o.d"
  "/work/main/kernels_cpu/check/qk_norm_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/qk_norm_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/qk_norm_check.cpp.o.d"
  "/work/main/kernels_cpu/check/residual_add_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/residual_add_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/residual_add_check.cpp.o.d"
  "/work/main/kernels_cpu/check/rmsnorm_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rmsnorm_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rmsnorm_check.cpp.o.d"
  "/work/main/kernels_cpu/check/rmsnorm_gated_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rmsnorm_gated_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rmsnorm_gated_check.cpp.o.d"
  "/work/main/kernels_cpu/check/rope_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rope_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rope_check.cpp.o.d"
  "/work/main/kernels_cpu/check/router_noaux_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/router_noaux_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/router_noaux_check.cpp.o.d"
  "/work/main/kernels_cpu/check/router_topk_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/router_topk_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/router_topk_check.cpp.o.d"
  "/work/main/kernels_cpu/check/swiglu_expert_check.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/swiglu_expert_check.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/check/swiglu_expert_check.cpp.o.d"
  "/work/main/kernels_cpu/core/check_util.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/core/check_util.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/core/check_util.cpp.o.d"
  "/work/main/kernels_cpu/core/mlx_quantize.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/core/mlx_quantize.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/core/mlx_quantize.cpp.o.d"
  "/work/main/kernels_cpu/ops/argmax_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/argmax_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/argmax_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/argmax_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/argmax_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/argmax_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/attention_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/attention_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/attention_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/attention_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/attention_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/attention_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/conv1d_step_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/conv1d_step_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/conv1d_step_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/conv1d_step_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/conv1d_step_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/conv1d_step_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/decay_beta_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/decay_beta_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/decay_beta_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/decay_beta_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/decay_beta_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/decay_beta_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/delta_net_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/delta_net_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/delta_net_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/delta_net_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/delta_net_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/delta_net_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/dequant_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/dequant_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/dequant_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/dequant_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/dequant_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/dequant_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/embedding_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/embedding_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/embedding_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/embedding_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/embedding_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/embedding_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/expert_buckets_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/expert_buckets_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/expert_buckets_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/expert_buckets_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/expert_buckets_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/expert_buckets_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/matmul_q_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matmul_q_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matmul_q_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/matmul_q_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matmul_q_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matmul_q_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/matvec_bf16_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_bf16_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_bf16_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/matvec_bf16_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_bf16_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_bf16_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/matvec_q_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_q_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_q_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/matvec_q_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_q_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_q_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/moe_combine_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_combine_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_combine_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/moe_combine_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_combine_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_combine_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/moe_permute_fuse_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_permute_fuse_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_permute_fuse_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/moe_permute_fuse_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_permute_fuse_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_permute_fuse_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/qk_norm_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/qk_norm_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/qk_norm_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/qk_norm_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/qk_norm_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/qk_norm_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/residual_add_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/residual_add_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/residual_add_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/residual_add_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/residual_add_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/residual_add_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/rmsnorm_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/rmsnorm_gated_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_gated_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_gated_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/rmsnorm_gated_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_gated_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_gated_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/rmsnorm_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/rope_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rope_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rope_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/rope_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rope_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rope_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/router_noaux_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_noaux_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_noaux_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/router_noaux_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_noaux_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_noaux_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/router_topk_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_topk_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_topk_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/router_topk_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_topk_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_topk_ref.cpp.o.d"
  "/work/main/kernels_cpu/ops/swiglu_expert_fast.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/swiglu_expert_fast.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/swiglu_expert_fast.cpp.o.d"
  "/work/main/kernels_cpu/ops/swiglu_expert_ref.cpp" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/swiglu_expert_ref.cpp.o" "gcc" "kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/swiglu_expert_ref.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
