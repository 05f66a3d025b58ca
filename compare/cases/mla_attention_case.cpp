#include <cmath>
#include <string>

#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "compare/cases/instances.h"
#include "ops/mla_attention.h"
#include "spec/mla_attention_spec.h"

namespace moe::compare {

// mla_attention's GPU cases: the shapes, inputs and bound of spec/mla_attention_spec.h under the
// device's precision model, for a kernel whose sums are one order over all rows (chunk 0). The
// caches after the append are compared bit for bit.
OpCase mla_attention_instance(const std::string& label, uint64_t seed, const MlaAttentionParams& p,
                              std::span<const float> q, std::span<const float> latent, std::span<const float> k_pe,
                              const QuantMatrix& kv_b, std::span<const float> latent_cache,
                              std::span<const float> kpe_cache) {
  OpCase c = new_case("mla_attention", label, seed);
  set_vars(c, p);
  // The scale a kernel is handed (the op's 0 means 1/sqrt(Dn + Dr)).
  c.vars["softmax_scale"] = p.scale != 0.0f ? double(p.scale) : double(1.0f / std::sqrt(float(p.nope_dim + p.rope_dim)));
  std::vector<float> lc(latent_cache.begin(), latent_cache.end()), kc(kpe_cache.begin(), kpe_cache.end());
  const int64_t n = p.tokens * p.heads * p.v_dim;
  std::vector<float> o(static_cast<size_t>(n));
  mla_attention_ref<double>(p, q, latent, k_pe, kv_b, lc, kc, o);
  c.tensors["q"] = f32_tensor(q);
  c.tensors["latent"] = f32_tensor(latent);
  c.tensors["k_pe"] = f32_tensor(k_pe);
  c.tensors["latent_cache"] = f32_tensor(latent_cache);
  c.tensors["kpe_cache"] = f32_tensor(kpe_cache);
  add_quant_tensors(c, "kv_b", kv_b);
  c.tensors["o"] = output_f32(n);
  set_reduction_output(c, "o", widen(o), mla_attention_bound(p, q, kv_b, lc, kc, 0, device_model()));
  set_exact_output(c, "latent_cache", lc);
  set_exact_output(c, "kpe_cache", kc);
  return c;
}

std::vector<OpCase> mla_attention_cases(bool rem, bool real, uint64_t seed) {
  return build_cases(mla_attention_shapes(rem, real), [&](const MlaAttentionShape& s) -> std::optional<OpCase> {
    if (!s.variant.gpu) return std::nullopt;
    const MlaAttentionInputs in = mla_attention_inputs(s.p, seed + s.seed_offset, s.variant.q_gain);
    return mla_attention_instance(s.label, seed + s.seed_offset, s.p, in.q, in.latent, in.k_pe, in.kv_b.view(),
                                  in.latent_cache, in.kpe_cache);
  });
}

}  // namespace moe::compare
