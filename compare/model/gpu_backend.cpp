#include "compare/model/gpu_backend.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "compare/cases/conventions.h"
#include "compare/cases/instances.h"
#include "compare/vk/runner.h"
#include "core/check.h"

namespace moe::compare {
namespace {

// Norm weights reach the forward as f32; the kernels read them as bf16, as checkpoints store
// them. Only an exact conversion is allowed (a weight that is not a bf16 value — e.g. 1 + w folded
// in f32 from an HF checkpoint — makes the call uncovered instead of silently changing it).
std::vector<bf16> exact_bf16(std::span<const float> w, const std::string& what) {
  std::vector<bf16> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    out[i] = f32_to_bf16_trunc(w[i]);
    MOE_CHECK(bf16_to_f32(out[i]) == w[i] || (w[i] != w[i] && out[i] != out[i]),
              what << ": weight " << i << " = " << w[i] << " is not a bf16 value (the kernels read bf16 weights)");
  }
  return out;
}

int64_t layer_of(const std::string& where) {
  const std::string pre = "model.layers.";
  if (where.rfind(pre, 0) != 0) return -1;
  return std::stoll(where.substr(pre.size()));
}

// A limit of the case that is not finite (its bound formed from NaN / Inf inputs: in free mode an
// earlier op's output), as "output 'y' bound"; "" when every limit is a number.
std::string nonfinite_limit(const OpCase& c) {
  std::vector<const std::map<std::string, OutputSpec>*> all{&c.outputs};
  for (const CaseStep& s : c.steps) all.push_back(&s.outputs);
  for (const auto* outs : all)
    for (const auto& [name, spec] : *outs)
      for (const auto& [what, v] :
           {std::pair{"bound", &spec.bound}, {"ULP budget", &spec.ulp_budget}, {"score bound", &spec.score_bound}})
        for (double x : *v)
          if (!std::isfinite(x)) return "output '" + name + "' " + what;
  return "";
}

}  // namespace

GpuBackend::GpuBackend(vk::Context& ctx, const Manifest& m, Feed feed, uint32_t subgroup, uint64_t timeout_ms)
    : ctx_(ctx), m_(m), feed_(feed), subgroup_(subgroup), timeout_ms_(timeout_ms), cpu_(make_cpu_backend("ref64")) {}

GpuBackend::~GpuBackend() = default;

OpRecord GpuBackend::new_record(const std::string& op) const {
  OpRecord r;
  r.where = where_.empty() ? op : where_;
  r.layer = layer_of(r.where);
  r.op = op;
  if (offset_ >= 0)
    r.token = pos_ + offset_, r.tokens = 1;
  else
    r.token = pos_, r.tokens = tokens_;
  return r;
}

void GpuBackend::run(const std::string& op, const std::function<OpCase()>& make, const std::vector<Out>& outs,
                     const std::function<void()>& cpu) {
  OpRecord rec = new_record(op);
  OpCase c;
  try {
    c = make();
  } catch (const Error& e) {
    rec.note = std::string("inputs the kernels cannot take: ") + e.what();
  }
  if (rec.note.empty()) {
    const std::string limit = nonfinite_limit(c);
    if (!limit.empty()) rec.note = "no bound to judge it by: " + limit + " is not finite (its inputs carry NaN or Inf)";
  }
  if (!rec.note.empty()) {
    cpu();
    records_.push_back(rec);
    if (on_record) on_record(records_.back(), c);
    return;
  }
  c.shape = rec.where + (rec.tokens == 1 ? " token " + std::to_string(rec.token)
                                         : " tokens " + std::to_string(rec.token) + ".." +
                                               std::to_string(rec.token + rec.tokens - 1));
  auto it = plans_.find(op);
  if (it == plans_.end()) {
    std::string why;
    it = plans_.emplace(op, plans_for(m_, op, &why)).first;
  }
  std::map<std::string, std::vector<uint32_t>> got;
  std::string skipped;
  for (const Plan& plan : it->second) {
    // The forward's tensors are in the op's default form; a kernel in other conventions
    // (compare/cases/conventions.h) would be judged on inputs it does not take.
    if (!plan_conventions(plan).empty()) {
      skipped += (skipped.empty() ? "" : "; ") + plan.label + " declares conventions " +
                 conventions_text(plan_conventions(plan)) + ", which a model run does not translate";
      continue;
    }
    CaseResult r = run_plan_case(ctx_, m_, plan, c, subgroup_, timeout_ms_, &got);
    if (r.skipped) {
      skipped += (skipped.empty() ? "" : "; ") + r.skip_reason;
      got.clear();
      continue;
    }
    rec.covered = true, rec.result = std::move(r);
    break;
  }
  if (!rec.covered) rec.note = it->second.empty() ? "the manifest has no kernel for this op" : skipped;
  // The outputs the forward continues with: the GPU's (free, when a plan ran and produced
  // them) or the truth's (isolated, or uncovered).
  bool gpu = feed_ == Feed::Gpu && rec.covered && rec.result.error.empty();
  // Indices the forward would look up (experts) must be in range even when wrong: a kernel that
  // wrote others has failed its case already; the forward goes on with the truth's there.
  const auto ex = c.vars.find("experts");
  for (const Out& o : outs)
    if (gpu && o.f.empty() && got.count(o.tensor))
      for (uint32_t w : got.at(o.tensor))
        if (int32_t(w) < 0 || (ex != c.vars.end() && double(int32_t(w)) >= ex->second)) gpu = false;
  for (const Out& o : outs) {
    if (gpu) {
      const std::vector<uint32_t>& w = got.at(o.tensor);
      if (!o.f.empty()) {
        MOE_CHECK(w.size() == o.f.size(), op << ": tensor " << o.tensor << " has " << w.size() << " words, "
                                             << o.f.size() << " expected");
        std::memcpy(o.f.data(), w.data(), w.size() * 4);
      } else {
        MOE_CHECK(w.size() == o.i.size(), op << ": tensor " << o.tensor << " has " << w.size() << " words, "
                                             << o.i.size() << " expected");
        std::memcpy(o.i.data(), w.data(), w.size() * 4);
      }
    } else {
      const std::vector<double>& t = c.truth.at(o.tensor);
      if (!o.f.empty()) {
        MOE_CHECK(t.size() == o.f.size(), op << ": truth of " << o.tensor << " has " << t.size() << " values");
        for (size_t i = 0; i < t.size(); ++i) o.f[i] = float(t[i]);
      } else {
        MOE_CHECK(t.size() == o.i.size(), op << ": truth of " << o.tensor << " has " << t.size() << " values");
        for (size_t i = 0; i < t.size(); ++i) o.i[i] = int32_t(t[i]);
      }
    }
  }
  records_.push_back(std::move(rec));
  if (on_record) on_record(records_.back(), c);
}

// ---- ops with instances -------------------------------------------------------------------

void GpuBackend::embedding(const EmbeddingParams& p, const QuantMatrix& table, std::span<const int32_t> ids,
                           std::span<float> y) {
  run("embedding", [&] { return embedding_instance(where_, 0, p, table, ids); }, {{"y", y, {}}},
      [&] { cpu_->embedding(p, table, ids, y); });
}

void GpuBackend::rmsnorm(const RmsNormParams& p, std::span<const float> x, std::span<const float> w,
                         std::span<float> y) {
  // The forward normalises q/k in place (y aliases x): the instance copies x first.
  run("rmsnorm", [&] { return rmsnorm_instance(where_, 0, p, x, exact_bf16(w, where_)); }, {{"y", y, {}}},
      [&] { cpu_->rmsnorm(p, x, w, y); });
}

void GpuBackend::qk_norm(const QkNormParams& p, std::span<const float> q, std::span<const float> k,
                         std::span<float> qo, std::span<float> ko) {
  run("qk_norm", [&] { return qk_norm_instance(where_, 0, p, q, k); }, {{"q_out", qo, {}}, {"k_out", ko, {}}},
      [&] { cpu_->qk_norm(p, q, k, qo, ko); });
}

void GpuBackend::rmsnorm_gated(const RmsNormGatedParams& p, std::span<const float> o, std::span<const float> z,
                               std::span<const float> w, std::span<float> y) {
  run("rmsnorm_gated", [&] { return rmsnorm_gated_instance(where_, 0, p, o, z, exact_bf16(w, where_)); },
      {{"y", y, {}}}, [&] { cpu_->rmsnorm_gated(p, o, z, w, y); });
}

void GpuBackend::rope(const RopeParams& p, std::span<const int64_t> pos, std::span<const float> x, std::span<float> y) {
  run("rope", [&] { return rope_instance(where_, 0, p, pos, x); }, {{"y", y, {}}},
      [&] { cpu_->rope(p, pos, x, y); });
}

void GpuBackend::moe_combine(const MoeCombineParams& p, std::span<const float> h, std::span<const float> e,
                             std::span<const float> w, std::span<const float> sh, std::span<const float> gamma,
                             std::span<float> out) {
  run("moe_combine", [&] { return moe_combine_instance(where_, 0, p, h, e, w, sh, gamma); }, {{"out", out, {}}},
      [&] { cpu_->moe_combine(p, h, e, w, sh, gamma, out); });
}

void GpuBackend::residual_add(const ResidualAddParams& p, std::span<const float> a, std::span<const float> b,
                              std::span<float> y) {
  run("residual_add", [&] { return residual_add_instance(where_, 0, p, a, b); }, {{"y", y, {}}},
      [&] { cpu_->residual_add(p, a, b, y); });
}

void GpuBackend::conv1d_step(const Conv1dStepParams& p, std::span<const float> x, std::span<const float> w,
                             std::span<float> state, std::span<float> y) {
  std::vector<Out> outs = {{"y", y, {}}};
  if (p.kernel > 1) outs.push_back({"state", state, {}});
  run("conv1d_step", [&] { return conv1d_step_instance(where_, 0, p, x, exact_bf16(w, where_), state); }, outs,
      [&] { cpu_->conv1d_step(p, x, w, state, y); });
}

void GpuBackend::decay_beta(const DecayBetaParams& p, std::span<const float> a, std::span<const float> b,
                            std::span<const float> A_log, std::span<const float> dt_bias, std::span<float> g,
                            std::span<float> beta) {
  run("decay_beta", [&] { return decay_beta_instance(where_, 0, p, a, b, A_log, exact_bf16(dt_bias, where_)); },
      {{"g", g, {}}, {"beta", beta, {}}}, [&] { cpu_->decay_beta(p, a, b, A_log, dt_bias, g, beta); });
}

void GpuBackend::delta_net(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                           std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                           std::span<float> state, std::span<float> o) {
  run("delta_net", [&] { return delta_net_instance(where_, 0, p, q, k, v, g, beta, state); },
      {{"o", o, {}}, {"state", state, {}}}, [&] { cpu_->delta_net(p, q, k, v, g, beta, state, o); });
}

void GpuBackend::attention(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                           std::span<const float> k, std::span<const float> v, std::span<float> kc,
                           std::span<float> vc, std::span<float> o) {
  run("attention", [&] { return attention_instance(where_, 0, p, q, gate, k, v, kc, vc); },
      {{"o", o, {}}, {"k_cache", kc, {}}, {"v_cache", vc, {}}},
      [&] { cpu_->attention(p, q, gate, k, v, kc, vc, o); });
}

void GpuBackend::router_topk(const RouterTopkParams& p, std::span<const float> logits, std::span<int32_t> idx,
                             std::span<float> w) {
  run("router_topk", [&] { return router_topk_instance(where_, 0, p, logits); }, {{"idx", {}, idx}, {"w", w, {}}},
      [&] { cpu_->router_topk(p, logits, idx, w); });
}

void GpuBackend::matmul_q(const MatmulQParams& p, const QuantMatrix& w, std::span<const float> x, std::span<float> y) {
  run("matmul_q", [&] { return matmul_q_instance(where_, 0, p, w, x); }, {{"y", y, {}}},
      [&] { cpu_->matmul_q(p, w, x, y); });
}

void GpuBackend::matvec_ggml(const MatvecGgmlParams& p, const BlockMatrix& w, std::span<const float> x,
                             std::span<float> y) {
  run("matvec_ggml", [&] { return matvec_ggml_instance(where_, 0, p, w, x); }, {{"y", y, {}}},
      [&] { cpu_->matvec_ggml(p, w, x, y); });
}

void GpuBackend::dequant_ggml(const DequantGgmlParams& p, const BlockMatrix& w, std::span<float> y) {
  run("dequant_ggml", [&] { return dequant_ggml_instance(where_, 0, p, w); }, {{"y", y, {}}},
      [&] { cpu_->dequant_ggml(p, w, y); });
}

void GpuBackend::glu(const GluParams& p, std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  // y may be gate or up (the forward writes the activation over gate): the instance copies its inputs.
  run("glu", [&] { return glu_instance(where_, 0, p, gate, up); }, {{"y", y, {}}},
      [&] { cpu_->glu(p, gate, up, y); });
}

void GpuBackend::swiglu_expert(const SwigluExpertParams& p, const ExpertWeights& e, std::span<const float> x,
                               std::span<float> y) {
  run("swiglu_expert", [&] { return swiglu_expert_instance(where_, 0, p, e, x); }, {{"y", y, {}}},
      [&] { cpu_->swiglu_expert(p, e, x, y); });
}

// ---- DeepSeek-V3 -------------------------------------------------------------------------

void GpuBackend::rope_yarn(const RopeYarnParams& p, std::span<const int64_t> pos, std::span<const float> x,
                           std::span<float> y) {
  run("rope_yarn", [&] { return rope_yarn_instance(where_, 0, p, pos, x); }, {{"y", y, {}}},
      [&] { cpu_->rope_yarn(p, pos, x, y); });
}

void GpuBackend::matvec_bf16(const MatvecBf16Params& p, std::span<const bf16> w, std::span<const float> x,
                             std::span<float> y) {
  run("matvec_bf16", [&] { return matvec_bf16_instance(where_, 0, p, w, x); }, {{"y", y, {}}},
      [&] { cpu_->matvec_bf16(p, w, x, y); });
}

void GpuBackend::router_noaux(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                              std::span<int32_t> idx, std::span<float> w) {
  run("router_noaux", [&] { return router_noaux_instance(where_, 0, p, logits, bias); },
      {{"idx", {}, idx}, {"w", w, {}}}, [&] { cpu_->router_noaux(p, logits, bias, idx, w); });
}

void GpuBackend::mla_attention(const MlaAttentionParams& p, std::span<const float> q, std::span<const float> latent,
                               std::span<const float> k_pe, const MlaKvB& kv_b, std::span<float> latent_cache,
                               std::span<float> kpe_cache, std::span<float> o) {
  // The instance reads the caches before the call; the device's caches after it come back into them.
  // No bundled kernel reads llama.cpp's k_b / v_b: such a call is recorded as not covered.
  run("mla_attention", [&] {
        MOE_CHECK(!kv_b.ggml, "llama.cpp's k_b / v_b (a GGUF deepseek2 model): no GPU kernel reads them");
        return mla_attention_instance(where_, 0, p, q, latent, k_pe, kv_b.mlx, latent_cache, kpe_cache);
      },
      {{"o", o, {}}, {"latent_cache", latent_cache, {}}, {"kpe_cache", kpe_cache, {}}},
      [&] { cpu_->mla_attention(p, q, latent, k_pe, kv_b, latent_cache, kpe_cache, o); });
}

}  // namespace moe::compare
