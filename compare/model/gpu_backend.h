// The Vulkan op backend: the forward (oracle/forward.h) runs its ops on the kernels of a manifest
// (bundled or an engine's). Every op call becomes an op instance (compare/cases/instances.h: the
// call's real inputs, the f64 truth, the op's bound), runs on the first plan of the manifest that
// accepts it (compare/run/driver.h: the op's kernel, a fused kernel, or a chain of stage kernels) and
// is decided there, so each op is judged on exactly the inputs it got.
//
// Feed::Truth ("isolated"): the forward continues on the truth's outputs, so error never
// accumulates and the first failing op is the culprit. Feed::Gpu ("free"): it continues on the
// GPU's outputs (KV caches and linear-attention state included), the engine's situation.
// An op the manifest does not cover (no plan, the case outside every plan's limits, or an input
// the kernels cannot take) runs on the CPU truth and is recorded as uncovered, with the reason.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compare/run/driver.h"
#include "oracle/backend.h"

namespace moe::compare {

enum class Feed { Truth, Gpu };

struct OpRecord {
  std::string where;    // module path from the forward ("model.layers.3.linear_attn.conv")
  int64_t layer = -1;   // parsed from `where` (-1: embedding, final norm, lm_head)
  int64_t token = 0;    // absolute position of the first token the call covers
  int64_t tokens = 1;   // tokens the call covers
  std::string op;       // the op (op_list.def name)
  bool covered = false; // a plan ran; `result` holds its verdicts
  std::string note;     // uncovered: why
  CaseResult result;
};

class GpuBackend final : public OpBackend {
 public:
  GpuBackend(vk::Context& ctx, const Manifest& m, Feed feed, uint32_t subgroup = 0, uint64_t timeout_ms = 60000);
  ~GpuBackend() override;
  const char* name() const override { return feed_ == Feed::Truth ? "vulkan-isolated" : "vulkan"; }
  // Before each Forward::run: the position of its first token and its token count.
  void begin(int64_t pos, int64_t tokens) { pos_ = pos, tokens_ = tokens; }
  void locate(const std::string& where, int64_t token_offset) override { where_ = where, offset_ = token_offset; }

  void embedding(const EmbeddingParams&, const QuantMatrix&, std::span<const int32_t>, std::span<float>) override;
  void matmul_q(const MatmulQParams&, const QuantMatrix&, std::span<const float>, std::span<float>) override;
  void matvec_ggml(const MatvecGgmlParams&, const BlockMatrix&, std::span<const float>, std::span<float>) override;
  void dequant_ggml(const DequantGgmlParams&, const BlockMatrix&, std::span<float>) override;
  void glu(const GluParams&, std::span<const float>, std::span<const float>, std::span<float>) override;
  void rmsnorm(const RmsNormParams&, std::span<const float>, std::span<const float>, std::span<float>) override;
  void qk_norm(const QkNormParams&, std::span<const float>, std::span<const float>, std::span<float>,
               std::span<float>) override;
  void rmsnorm_gated(const RmsNormGatedParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                     std::span<float>) override;
  void rope(const RopeParams&, std::span<const int64_t>, std::span<const float>, std::span<float>) override;
  void conv1d_step(const Conv1dStepParams&, std::span<const float>, std::span<const float>, std::span<float>,
                   std::span<float>) override;
  void decay_beta(const DecayBetaParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                  std::span<const float>, std::span<float>, std::span<float>) override;
  void delta_net(const DeltaNetParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                 std::span<const float>, std::span<const float>, std::span<float>, std::span<float>) override;
  void attention(const AttentionParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                 std::span<const float>, std::span<float>, std::span<float>, std::span<float>) override;
  void router_topk(const RouterTopkParams&, std::span<const float>, std::span<int32_t>, std::span<float>) override;
  void swiglu_expert(const SwigluExpertParams&, const ExpertWeights&, std::span<const float>,
                     std::span<float>) override;
  void moe_combine(const MoeCombineParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                   std::span<const float>, std::span<const float>, std::span<float>) override;
  void residual_add(const ResidualAddParams&, std::span<const float>, std::span<const float>,
                    std::span<float>) override;
  // DeepSeek-V3's ops.
  void rope_yarn(const RopeYarnParams&, std::span<const int64_t>, std::span<const float>, std::span<float>) override;
  void mla_attention(const MlaAttentionParams&, std::span<const float>, std::span<const float>, std::span<const float>,
                     const MlaKvB&, std::span<float>, std::span<float>, std::span<float>) override;
  void matvec_bf16(const MatvecBf16Params&, std::span<const bf16>, std::span<const float>, std::span<float>) override;
  void router_noaux(const RouterNoauxParams&, std::span<const float>, std::span<const float>, std::span<int32_t>,
                    std::span<float>) override;

  const std::vector<OpRecord>& records() const { return records_; }
  // Called with every record as it is made, and the instance it ran (progress, bisect).
  std::function<void(const OpRecord&, const OpCase&)> on_record;

  // Output tensors of an op call: the case tensor's name and where the forward wants it.
  struct Out {
    std::string tensor;
    std::span<float> f;
    std::span<int32_t> i;
  };

 private:
  // Runs one op call: `make` builds the instance (a moe::Error there makes the call uncovered),
  // `cpu` computes the outputs on the CPU truth backend (used when no instance can be built).
  void run(const std::string& op, const std::function<OpCase()>& make, const std::vector<Out>& outs,
           const std::function<void()>& cpu);
  OpRecord new_record(const std::string& op) const;

  vk::Context& ctx_;
  const Manifest& m_;
  Feed feed_;
  uint32_t subgroup_;
  uint64_t timeout_ms_;
  std::unique_ptr<OpBackend> cpu_;  // ref64: the truth, for ops no instance covers
  std::map<std::string, std::vector<Plan>> plans_;
  std::vector<OpRecord> records_;
  std::string where_;
  int64_t offset_ = -1, pos_ = 0, tokens_ = 1;
};

}  // namespace moe::compare
