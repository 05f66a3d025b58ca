// Op instances: one op call with given parameters and inputs made into an OpCase — the tensors
// a kernel binds, the f64 truth and the per-output decision with its bound. The generated cases
// (compare/cases/<op>_case.cpp) draw random inputs and call these; the model-level comparison
// (compare/model) calls them with the forward's real inputs, so an op is judged by the same
// bound whether its inputs came from a seed or from a model; bisect saves such an instance as a
// case file. `label` and `seed` only name the case in reports.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "compare/cases/cases.h"
#include "core/bf16.h"
#include "core/quant.h"
#include "ops/attention.h"
#include "core/expert_blob.h"
#include "ops/conv1d_step.h"
#include "ops/decay_beta.h"
#include "ops/delta_net.h"
#include "ops/dequant_ggml.h"
#include "ops/embedding.h"
#include "ops/glu.h"
#include "ops/matmul_q.h"
#include "ops/moe_combine.h"
#include "ops/qk_norm.h"
#include "ops/residual_add.h"
#include "ops/rmsnorm.h"
#include "ops/rmsnorm_gated.h"
#include "ops/matvec_bf16.h"
#include "ops/matvec_ggml.h"
#include "ops/mla_attention.h"
#include "ops/rope.h"
#include "ops/rope_yarn.h"
#include "ops/router_noaux.h"
#include "ops/swiglu_expert.h"
#include "ops/router_topk.h"

namespace moe::compare {

OpCase rmsnorm_instance(const std::string& label, uint64_t seed, const RmsNormParams& p, std::span<const float> x,
                        std::span<const bf16> w);
OpCase residual_add_instance(const std::string& label, uint64_t seed, const ResidualAddParams& p,
                             std::span<const float> a, std::span<const float> b);
OpCase qk_norm_instance(const std::string& label, uint64_t seed, const QkNormParams& p, std::span<const float> q,
                        std::span<const float> k);
OpCase rmsnorm_gated_instance(const std::string& label, uint64_t seed, const RmsNormGatedParams& p,
                              std::span<const float> o, std::span<const float> z, std::span<const bf16> w);
// Positions must fit the kernels' u32 positions buffer (moe::Error otherwise).
OpCase rope_instance(const std::string& label, uint64_t seed, const RopeParams& p, std::span<const int64_t> positions,
                     std::span<const float> x);
OpCase rope_yarn_instance(const std::string& label, uint64_t seed, const RopeYarnParams& p,
                          std::span<const int64_t> positions, std::span<const float> x);
OpCase matvec_bf16_instance(const std::string& label, uint64_t seed, const MatvecBf16Params& p,
                            std::span<const bf16> W, std::span<const float> x);
// GGUF models' ops; `exact`: the matvec_ggml spec's exact inputs (bound 0).
OpCase matvec_ggml_instance(const std::string& label, uint64_t seed, const MatvecGgmlParams& p, const BlockMatrix& W,
                            std::span<const float> x, bool exact = false);
OpCase dequant_ggml_instance(const std::string& label, uint64_t seed, const DequantGgmlParams& p,
                             const BlockMatrix& W);
OpCase glu_instance(const std::string& label, uint64_t seed, const GluParams& p, std::span<const float> gate,
                    std::span<const float> up);
OpCase router_noaux_instance(const std::string& label, uint64_t seed, const RouterNoauxParams& p,
                             std::span<const float> logits, std::span<const float> bias);
OpCase mla_attention_instance(const std::string& label, uint64_t seed, const MlaAttentionParams& p,
                              std::span<const float> q, std::span<const float> latent, std::span<const float> k_pe,
                              const QuantMatrix& kv_b, std::span<const float> latent_cache,
                              std::span<const float> kpe_cache);
OpCase embedding_instance(const std::string& label, uint64_t seed, const EmbeddingParams& p, const QuantMatrix& table,
                          std::span<const int32_t> ids);
OpCase moe_combine_instance(const std::string& label, uint64_t seed, const MoeCombineParams& p,
                            std::span<const float> h, std::span<const float> e, std::span<const float> w,
                            std::span<const float> sh, std::span<const float> gamma);

// State tensors ("state") are inout: uploaded from `state0`, their truth is the state after the call.
OpCase conv1d_step_instance(const std::string& label, uint64_t seed, const Conv1dStepParams& p,
                            std::span<const float> x, std::span<const bf16> w, std::span<const float> state0);
OpCase decay_beta_instance(const std::string& label, uint64_t seed, const DecayBetaParams& p, std::span<const float> a,
                           std::span<const float> b, std::span<const float> A_log, std::span<const bf16> dt_bias);
OpCase delta_net_instance(const std::string& label, uint64_t seed, const DeltaNetParams& p, std::span<const float> q,
                          std::span<const float> k, std::span<const float> v, std::span<const float> g,
                          std::span<const float> beta, std::span<const float> state0);

// Caches are inout: their truth is the caches after the append. scale = 0 means the models'
// 1/sqrt(D), passed to the kernels (and used by the truth) as the f32 value 1/sqrtf(D).
OpCase attention_instance(const std::string& label, uint64_t seed, const AttentionParams& p, std::span<const float> q,
                          std::span<const float> gate, std::span<const float> k, std::span<const float> v,
                          std::span<const float> k_cache, std::span<const float> v_cache);

// idx (i32, decided as index sets with the near-tie rule) and w (paired with idx).
OpCase router_topk_instance(const std::string& label, uint64_t seed, const RouterTopkParams& p,
                            std::span<const float> logits);

OpCase matmul_q_instance(const std::string& label, uint64_t seed, const MatmulQParams& p, const QuantMatrix& W,
                         std::span<const float> x);
// Tensors gate.*, up.*, down.* (quantized, group 64), x, act (the chain's intermediate), y.
OpCase swiglu_expert_instance(const std::string& label, uint64_t seed, const SwigluExpertParams& p,
                              const ExpertWeights& e, std::span<const float> x);

}  // namespace moe::compare
