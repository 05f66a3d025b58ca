#include "oracle/backend.h"

#include "core/check.h"

namespace moe {
namespace {

enum class Tier { Ref64, Ref32, Fast };

// Dispatches op(args) to the tier: <op>_ref<double>, <op>_ref<float> or <op>_fast.
#define MOE_TIER_CALL(op, ...)                                 \
  do {                                                         \
    if constexpr (T == Tier::Ref64) op##_ref<double>(__VA_ARGS__); \
    else if constexpr (T == Tier::Ref32) op##_ref<float>(__VA_ARGS__); \
    else op##_fast(__VA_ARGS__);                               \
  } while (0)

template <Tier T>
class CpuBackend final : public OpBackend {
 public:
  const char* name() const override { return T == Tier::Ref64 ? "ref64" : T == Tier::Ref32 ? "ref32" : "fast"; }
  void embedding(const EmbeddingParams& p, const QuantMatrix& w, std::span<const int32_t> ids,
                 std::span<float> y) override {
    MOE_TIER_CALL(embedding, p, w, ids, y);
  }
  void matmul_q(const MatmulQParams& p, const QuantMatrix& w, std::span<const float> x, std::span<float> y) override {
    MOE_TIER_CALL(matmul_q, p, w, x, y);
  }
  void matvec_ggml(const MatvecGgmlParams& p, const BlockMatrix& w, std::span<const float> x,
                   std::span<float> y) override {
    MOE_TIER_CALL(matvec_ggml, p, w, x, y);
  }
  void dequant_ggml(const DequantGgmlParams& p, const BlockMatrix& w, std::span<float> y) override {
    MOE_TIER_CALL(dequant_ggml, p, w, y);
  }
  void glu(const GluParams& p, std::span<const float> gate, std::span<const float> up, std::span<float> y) override {
    MOE_TIER_CALL(glu, p, gate, up, y);
  }
  void rmsnorm(const RmsNormParams& p, std::span<const float> x, std::span<const float> w,
               std::span<float> y) override {
    MOE_TIER_CALL(rmsnorm, p, x, w, y);
  }
  void qk_norm(const QkNormParams& p, std::span<const float> q, std::span<const float> k, std::span<float> qo,
               std::span<float> ko) override {
    MOE_TIER_CALL(qk_norm, p, q, k, qo, ko);
  }
  void rmsnorm_gated(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                     std::span<const float> w, std::span<float> y) override {
    MOE_TIER_CALL(rmsnorm_gated, p, o, z, w, y);
  }
  void rope(const RopeParams& p, std::span<const int64_t> pos, std::span<const float> x, std::span<float> y) override {
    MOE_TIER_CALL(rope, p, pos, x, y);
  }
  void conv1d_step(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                   std::span<float> state, std::span<float> y) override {
    MOE_TIER_CALL(conv1d_step, p, x, w, state, y);
  }
  void decay_beta(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                  std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                  std::span<float> beta) override {
    MOE_TIER_CALL(decay_beta, p, a, b, A_log, dt_bias, g, beta);
  }
  void delta_net(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                 std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                 std::span<float> state, std::span<float> o) override {
    MOE_TIER_CALL(delta_net, p, q, k, v, g, beta, state, o);
  }
  void attention(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                 std::span<const float> k, std::span<const float> v, std::span<float> kc, std::span<float> vc,
                 std::span<float> o) override {
    MOE_TIER_CALL(attention, p, q, gate, k, v, kc, vc, o);
  }
  void router_topk(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                   std::span<float> w) override {
    MOE_TIER_CALL(router_topk, p, logits, idx, w);
  }
  void swiglu_expert(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                     std::span<float> y) override {
    MOE_TIER_CALL(swiglu_expert, p, e, x, y);
  }
  void moe_combine(const MoeCombineParams& p, std::span<const float> h, std::span<const float> e,
                   std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                   std::span<float> out) override {
    MOE_TIER_CALL(moe_combine, p, h, e, w, sh, gamma, out);
  }
  void residual_add(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                    std::span<float> y) override {
    MOE_TIER_CALL(residual_add, p, a, b, y);
  }
  void rope_yarn(const RopeYarnParams& p, std::span<const int64_t> pos, std::span<const float> x,
                 std::span<float> y) override {
    MOE_TIER_CALL(rope_yarn, p, pos, x, y);
  }
  void mla_attention(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                     std::span<const float> k_pe, const MlaKvB& kv_b, std::span<float> latent_cache,
                     std::span<float> kpe_cache, std::span<float> o) override {
    MOE_TIER_CALL(mla_attention, p, q, latent, k_pe, kv_b, latent_cache, kpe_cache, o);
  }
  void matvec_bf16(const MatvecBf16Params& p, std::span<const bf16> W, std::span<const float> x,
                   std::span<float> y) override {
    MOE_TIER_CALL(matvec_bf16, p, W, x, y);
  }
  void router_noaux(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                    std::span<int32_t> idx, std::span<float> w) override {
    MOE_TIER_CALL(router_noaux, p, logits, bias, idx, w);
  }
};

}  // namespace

std::unique_ptr<OpBackend> make_cpu_backend(const std::string& name) {
  if (name == "ref64") return std::make_unique<CpuBackend<Tier::Ref64>>();
  if (name == "ref32") return std::make_unique<CpuBackend<Tier::Ref32>>();
  if (name == "fast") return std::make_unique<CpuBackend<Tier::Fast>>();
  MOE_FAIL("unknown backend '" << name << "' (expected ref64, ref32 or fast)");
}

}  // namespace moe
