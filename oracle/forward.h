// The whole forward (docs/ops/forward.md "Decoder skeleton", "Per-token forward"), written once over
// the op-backend interface and composed only of kernels_cpu ops:
//   x = embed(tokens); per layer: h = x + Mixer(RMSNorm(x)); x = MoE-combine(h, RMSNorm(h));
//   logits = lm_head(RMSNorm(x)).
// T tokens at a time: prefill (T > 1, batched projections) or decode (T = 1). Linear attention,
// the KV cache and the MLA latent cache carry through `ModelState`; positions continue from state.pos.
// The mixer of each layer is its LayerKind (Linear, Full, Mla); the MoE router is the config's
// RouterKind (softmax top-k, or DeepSeek-V3's noaux_tc): one forward for every family.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oracle/backend.h"
#include "oracle/model.h"
#include "oracle/state.h"

namespace moe {

// Receives named tensors at fixed points of the forward (taps). Names follow HuggingFace module
// paths (design.md "Taps and dumps"); the leading dimension is the token.
class TapSink {
 public:
  virtual ~TapSink() = default;
  virtual bool wants(const std::string& name) const = 0;
  virtual void put(const std::string& name, std::span<const float> data, int64_t rows, int64_t cols) = 0;
  virtual void put_i32(const std::string& name, std::span<const int32_t> data, int64_t rows, int64_t cols) = 0;
  // Called after put() at the taps whose buffer the rest of the forward reads: a sink may overwrite
  // the values (judge's replay of an engine's dump, oracle/judge.h), and the forward goes on with
  // them. Same shape as put(); the default leaves them.
  virtual void substitute(const std::string& name, std::span<float> data, int64_t rows, int64_t cols) {
    (void)name, (void)data, (void)rows, (void)cols;
  }
  virtual void substitute_i32(const std::string& name, std::span<int32_t> data, int64_t rows, int64_t cols) {
    (void)name, (void)data, (void)rows, (void)cols;
  }
};

// Where the upstream implementations disagree, which one the forward follows
// (docs/ops/norms.md "Linear-attention q/k norm").
enum class QkNormEps {
  Hf,      // HF l2norm: q / sqrt(sum q^2 + 1e-6): the upstream truth
  Engine,  // MLX and every engine: rms_norm(q, eps = 1e-6), i.e. 1e-6 * dk inside the sum
};

struct ForwardOptions {
  int64_t experts_per_tok = 0;  // 0: the model's own K; engines often run fewer (docs/ops/moe.md "Which K")
  QkNormEps qk_norm_eps = QkNormEps::Hf;
};

class Forward {
 public:
  Forward(const Model& model, OpBackend& backend, ForwardOptions opt = {});
  // Runs `tokens` at positions state.pos, state.pos + 1, ...; returns logits [T, vocab].
  std::vector<float> run(std::span<const int32_t> tokens, ModelState& state, TapSink* taps = nullptr);
  int64_t experts_per_tok() const { return k_; }

 private:
  void linear_attention(int64_t layer, std::span<const float> xn, int64_t T, LayerState& st, std::span<float> out);
  void full_attention(int64_t layer, std::span<const float> xn, int64_t T, int64_t pos, LayerState& st,
                      std::span<float> out);
  // DeepSeek-V3 (forward_mla.cpp): MLA attention with the layer's latent / rope-key cache, and the
  // noaux_tc MoE block (BF16 gate, router_noaux, routed + ungated shared experts).
  void mla_attention(int64_t layer, std::span<const float> xn, int64_t T, int64_t pos, LayerState& st,
                     std::span<float> out);
  void kv_b_tap(int64_t layer, std::span<const float> latent, int64_t T);
  void moe_noaux(int64_t layer, std::span<const float> h, std::span<const float> hn, int64_t T, std::span<float> out);
  void routed_experts(int64_t layer, std::span<const float> hn, int64_t T, std::span<const int32_t> idx,
                      std::span<float> e);
  // The block's combine (moe_combine) of the routed experts of idx with the shared expert's sh,
  // gated by sigmoid(gamma) where gamma is not empty; taps mlp.out (the block without the
  // residual) and, with routed_tap, mlp.experts.out (the routed sum alone).
  void combine_experts(int64_t layer, std::span<const float> h, std::span<const float> hn, int64_t T,
                       std::span<const int32_t> idx, std::span<const float> wts, std::span<const float> sh,
                       std::span<const float> gamma, bool routed_tap, std::span<float> out);
  void mlp(int64_t layer, std::span<const float> h, std::span<const float> hn, int64_t T, std::span<float> out);
  // The projection `where` (a module name, for the backend's locate): y [T, w.rows] = x w^T.
  void matmul(const std::string& where, const Weight& w, std::span<const float> x, int64_t T, std::span<float> y);
  // A SwiGLU MLP (shared expert, dense MLP, one routed expert) whose weights are in ggml block
  // formats, as ggml computes it: gate and up (matvec_ggml), glu (SiLU), down.
  void expert_ggml(const GgmlExpert& e, std::span<const float> x, int64_t T, std::span<float> y);
  void embed(std::span<const int32_t> tokens, std::span<float> x);
  void tap(const std::string& name, std::span<const float> data, int64_t T);
  // A tap whose buffer the rest of the forward reads: put(), then the sink's substitute().
  void feed(const std::string& name, std::span<float> data, int64_t T);
  void feed_i32(const std::string& name, std::span<int32_t> data, int64_t T);
  void locate(const std::string& where);

  const Model& model_;
  OpBackend& be_;
  int64_t k_;
  QkNormEps qk_eps_;
  TapSink* taps_ = nullptr;
};

}  // namespace moe
