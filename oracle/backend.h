// The op-backend interface the forward is written against: one method per op the forward
// uses. The CPU backends (`ref64` = the truth, `ref32` = the engines' f32 order, `fast`) are one
// template over the tier; a GPU backend implements the same methods with its kernels.
#pragma once
#include <memory>
#include <span>
#include <string>

#include "ops_all.h"

namespace moe {

class OpBackend {
 public:
  virtual ~OpBackend() = default;
  virtual const char* name() const = 0;
  // Where the forward is about to call the next op(s): the module path ("model.layers.3.linear_attn.conv",
  // "lm_head") and, for per-token calls inside a multi-token forward, the token's offset in the
  // call (-1: the op covers all the call's tokens). Backends that compare or record ops use it.
  virtual void locate(const std::string& where, int64_t token_offset = -1) {
    (void)where, (void)token_offset;
  }
  virtual void embedding(const EmbeddingParams&, const QuantMatrix&, std::span<const int32_t>, std::span<float>) = 0;
  virtual void matmul_q(const MatmulQParams&, const QuantMatrix&, std::span<const float>, std::span<float>) = 0;
  // GGUF models: projections, embedding rows and the SwiGLU activation of ggml block-format weights.
  virtual void matvec_ggml(const MatvecGgmlParams&, const BlockMatrix&, std::span<const float>, std::span<float>) = 0;
  virtual void dequant_ggml(const DequantGgmlParams&, const BlockMatrix&, std::span<float>) = 0;
  virtual void glu(const GluParams&, std::span<const float>, std::span<const float>, std::span<float>) = 0;
  virtual void rmsnorm(const RmsNormParams&, std::span<const float>, std::span<const float>, std::span<float>) = 0;
  virtual void qk_norm(const QkNormParams&, std::span<const float>, std::span<const float>, std::span<float>,
                       std::span<float>) = 0;
  virtual void rmsnorm_gated(const RmsNormGatedParams&, std::span<const float>, std::span<const float>,
                             std::span<const float>, std::span<float>) = 0;
  virtual void rope(const RopeParams&, std::span<const int64_t>, std::span<const float>, std::span<float>) = 0;
  virtual void conv1d_step(const Conv1dStepParams&, std::span<const float>, std::span<const float>, std::span<float>,
                           std::span<float>) = 0;
  virtual void decay_beta(const DecayBetaParams&, std::span<const float>, std::span<const float>,
                          std::span<const float>, std::span<const float>, std::span<float>, std::span<float>) = 0;
  virtual void delta_net(const DeltaNetParams&, std::span<const float>, std::span<const float>,
                         std::span<const float>, std::span<const float>, std::span<const float>, std::span<float>,
                         std::span<float>) = 0;
  virtual void attention(const AttentionParams&, std::span<const float>, std::span<const float>,
                         std::span<const float>, std::span<const float>, std::span<float>, std::span<float>,
                         std::span<float>) = 0;
  virtual void router_topk(const RouterTopkParams&, std::span<const float>, std::span<int32_t>, std::span<float>) = 0;
  virtual void swiglu_expert(const SwigluExpertParams&, const ExpertWeights&, std::span<const float>,
                             std::span<float>) = 0;
  virtual void moe_combine(const MoeCombineParams&, std::span<const float>, std::span<const float>,
                           std::span<const float>, std::span<const float>, std::span<const float>, std::span<float>) = 0;
  virtual void residual_add(const ResidualAddParams&, std::span<const float>, std::span<const float>,
                            std::span<float>) = 0;
  // DeepSeek-V3: YaRN RoPE of q_pe / k_pe, the MLA core, the BF16 router gate (one token per
  // call), noaux_tc routing.
  virtual void rope_yarn(const RopeYarnParams&, std::span<const int64_t>, std::span<const float>, std::span<float>) = 0;
  virtual void mla_attention(const MlaAttentionParams&, std::span<const float>, std::span<const float>,
                             std::span<const float>, const MlaKvB&, std::span<float>, std::span<float>,
                             std::span<float>) = 0;
  virtual void matvec_bf16(const MatvecBf16Params&, std::span<const bf16>, std::span<const float>, std::span<float>) = 0;
  virtual void router_noaux(const RouterNoauxParams&, std::span<const float>, std::span<const float>,
                            std::span<int32_t>, std::span<float>) = 0;
};

// "ref64", "ref32" or "fast"; anything else is a moe::Error listing the names.
std::unique_ptr<OpBackend> make_cpu_backend(const std::string& name);

}  // namespace moe
