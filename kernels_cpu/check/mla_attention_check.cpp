// mla_attention's three-way check: the shapes, inputs and bound of spec/mla_attention_spec.h.
#include <algorithm>
#include <string>
#include <utility>

#include "check/checks.h"
#include "core/params.h"
#include "ops/mla_attention.h"
#include "spec/mla_attention_spec.h"

namespace moe {
namespace {

// Heads [h0, h0 + n) of a call as a call of its own: q's heads, kv_b's rows (the op is
// head-independent: a head reads only its q, its kv_b rows and the shared caches).
struct HeadWindow {
  MlaAttentionParams p;
  std::vector<float> q;
  MlaKvB kv_b;
};
HeadWindow head_window(const MlaAttentionParams& p, const MlaAttentionInputs& in, int64_t h0, int64_t n) {
  const MlaKvB all = in.view(p);
  HeadWindow w{p, {}, all};
  if (all.ggml)
    w.kv_b = {all.k_b.row_block(h0 * p.kv_lora, n * p.kv_lora), all.v_b.row_block(h0 * p.v_dim, n * p.v_dim)};
  else
    w.kv_b = all.mlx.row_block(h0 * (p.nope_dim + p.v_dim), n * (p.nope_dim + p.v_dim));
  w.p.heads = n;
  const int64_t Dq = p.nope_dim + p.rope_dim;
  for (int64_t t = 0; t < p.tokens; ++t)
    w.q.insert(w.q.end(), in.q.begin() + (t * p.heads + h0) * Dq, in.q.begin() + (t * p.heads + h0 + n) * Dq);
  return w;
}

CheckResult check_one(const std::string& label, const MlaAttentionParams& p, uint64_t seed, int head_windows,
                      double q_gain) {
  const MlaAttentionInputs in = mla_attention_inputs(p, seed, q_gain);
  const MlaKvB kv_b = in.view(p);
  // The caches after the append: rows [past, past + T) replaced, the rest untouched.
  std::vector<float> lc_want, kc_want;
  mla_attention_append(p, in, lc_want, kc_want);

  std::string shape = label;
  std::vector<std::pair<int64_t, int64_t>> windows;  // [first head, head count)
  constexpr int64_t kWindow = 4;
  if (head_windows <= 0 || p.heads <= head_windows * kWindow) {
    windows.push_back({0, p.heads});
  } else {
    const int64_t starts[] = {0, (p.heads - kWindow) / 2, p.heads - kWindow};
    for (int i = 0; i < std::min(head_windows, 3); ++i) windows.push_back({starts[i], kWindow});
    shape += " (scalar tiers on " + std::to_string(windows.size()) + " windows of 4 heads)";
  }
  CheckResult res{"mla_attention", shape, params_to_string(p), seed};
  std::vector<float> fast_all(p.tokens * p.heads * p.v_dim), lc_f = in.latent_cache, kc_f = in.kpe_cache;
  res.fast.seconds = time_call([&] { mla_attention_fast(p, in.q, in.latent, in.k_pe, kv_b, lc_f, kc_f, fast_all); });
  res.fast.add("latent_cache", lc_want, lc_f, 0.0);  // data movement: bit-exact
  res.fast.add("kpe_cache", kc_want, kc_f, 0.0);

  std::vector<float> truth, r32, fast;
  std::vector<double> bound;
  const int64_t Dv = p.v_dim;
  for (auto [h0, n] : windows) {
    const HeadWindow w = head_window(p, in, h0, n);
    const int64_t size = p.tokens * n * Dv;
    std::vector<float> t64(size), t32(size), lc_t = in.latent_cache, kc_t = in.kpe_cache;
    std::vector<float> lc_r = in.latent_cache, kc_r = in.kpe_cache;
    res.truth_seconds += time_call([&] { mla_attention_ref<double>(w.p, w.q, in.latent, in.k_pe, w.kv_b, lc_t, kc_t, t64); });
    res.ref32.seconds += time_call([&] { mla_attention_ref<float>(w.p, w.q, in.latent, in.k_pe, w.kv_b, lc_r, kc_r, t32); });
    res.ref32.add("latent_cache", lc_want, lc_r, 0.0);
    res.ref32.add("kpe_cache", kc_want, kc_r, 0.0);
    // Chunked: one bound covers the one-pass f32 tier and the fast tier's online softmax.
    const std::vector<double> b = mla_attention_bound(w.p, w.q, w.kv_b, lc_want, kc_want, kMlaFastChunk, cpu_f32_model());
    for (int64_t t = 0; t < p.tokens; ++t) {
      const int64_t off = t * n * Dv, full = (t * p.heads + h0) * Dv;
      truth.insert(truth.end(), t64.begin() + off, t64.begin() + off + n * Dv);
      r32.insert(r32.end(), t32.begin() + off, t32.begin() + off + n * Dv);
      fast.insert(fast.end(), fast_all.begin() + full, fast_all.begin() + full + n * Dv);
      bound.insert(bound.end(), b.begin() + off, b.begin() + off + n * Dv);
    }
  }
  res.ref32.add("o", truth, r32, bound);
  res.fast.add("o", truth, fast, bound);
  return res;
}

}  // namespace

CheckResult mla_attention_check_one(const char* label, const MlaAttentionParams& p, uint64_t seed, int head_windows) {
  return check_one(label, p, seed, head_windows, 1.0);
}

std::vector<CheckResult> mla_attention_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  for (const MlaAttentionShape& s : mla_attention_shapes(scope_has_remainders(scope), scope_has_real(scope)))
    out.push_back(check_one(s.label, s.p, seed + s.seed_offset, s.variant.head_windows, s.variant.q_gain));
  return out;
}

}  // namespace moe

