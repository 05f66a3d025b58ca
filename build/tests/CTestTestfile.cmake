# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build/tests/argmax_test[1]_include.cmake")
include("/work/main/build/tests/attention_test[1]_include.cmake")
include("/work/main/build/tests/conv1d_step_test[1]_include.cmake")
include("/work/main/build/tests/decay_beta_test[1]_include.cmake")
include("/work/main/build/tests/delta_net_test[1]_include.cmake")
include("/work/main/build/tests/dequant_test[1]_include.cmake")
include("/work/main/build/tests/embedding_test[1]_include.cmake")
include("/work/main/build/tests/expert_buckets_test[1]_include.cmake")
include("/work/main/build/tests/matmul_q_test[1]_include.cmake")
include("/work/main/build/tests/matvec_bf16_test[1]_include.cmake")
include("/work/main/build/tests/matvec_q_test[1]_include.cmake")
include("/work/main/build/tests/moe_combine_test[1]_include.cmake")
include("/work/main/build/tests/moe_permute_fuse_test[1]_include.cmake")
include("/work/main/build/tests/qk_norm_test[1]_include.cmake")
include("/work/main/build/tests/residual_add_test[1]_include.cmake")
include("/work/main/build/tests/rmsnorm_gated_test[1]_include.cmake")
include("/work/main/build/tests/rmsnorm_test[1]_include.cmake")
include("/work/main/build/tests/rope_test[1]_include.cmake")
include("/work/main/build/tests/router_noaux_test[1]_include.cmake")
include("/work/main/build/tests/router_topk_test[1]_include.cmake")
include("/work/main/build/tests/swiglu_expert_test[1]_include.cmake")
