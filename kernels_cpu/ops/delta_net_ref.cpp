#include <cmath>
#include <type_traits>
#include <string_view>
#include <utility>

#include "core/math.h"
#include "ops/delta_net.h"

namespace moe {
namespace {

// a*b + c: fused in the f32 tier, exactly where CPU-R fuses; in f64 (the truth) a plain
// multiply-add, whose extra rounding (2^-53) is far below anything compared.
template <class Acc>
inline Acc mul_add(Acc a, Acc b, Acc c) {
  if constexpr (std::is_same_v<Acc, float>) {
    return std::fma(a, b, c);
  } else {
    return a * b + c;
  }
}

}  // namespace

void delta_net_validate(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                        std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                        std::span<float> state, std::span<float> o) {
  MOE_CHECK(p.tokens >= 0 && p.k_heads > 0 && p.v_heads > 0 && p.key_dim > 0 && p.value_dim > 0,
            "delta_net: tokens=" << p.tokens << " k_heads=" << p.k_heads << " v_heads=" << p.v_heads
                                 << " key_dim=" << p.key_dim << " value_dim=" << p.value_dim
                                 << ", expected tokens >= 0 and the rest > 0");
  MOE_CHECK(p.v_heads % p.k_heads == 0,
            "delta_net: v_heads=" << p.v_heads << " is not a multiple of k_heads=" << p.k_heads);
  MOE_CHECK(p.decay_log == 0 || p.decay_log == 1, "delta_net: decay_log=" << p.decay_log << ", expected 0 or 1");
  MOE_CHECK(p.head_group == 0 || p.head_group == 1, "delta_net: head_group=" << p.head_group << ", expected 0 or 1");
  MOE_CHECK(std::isfinite(p.out_scale), "delta_net: out_scale=" << p.out_scale << ", expected a finite value");
  const int64_t T = p.tokens;
  check_size(q, T * p.k_heads * p.key_dim, "delta_net", "q");
  check_size(k, T * p.k_heads * p.key_dim, "delta_net", "k");
  check_size(v, T * p.v_heads * p.value_dim, "delta_net", "v");
  check_size(g, T * p.v_heads, "delta_net", "g");
  check_size(beta, T * p.v_heads, "delta_net", "beta");
  check_size(state, p.v_heads * p.value_dim * p.key_dim, "delta_net", "state");
  check_size(o, T * p.v_heads * p.value_dim, "delta_net", "o");
  // The state is rewritten token by token and o row by row: neither may overlap an input
  // (o may be v itself: v[t][h][vi] is read before o[t][h][vi] is written, and no later).
  const std::pair<const char*, std::span<const float>> inputs[] = {{"q", q}, {"k", k}, {"v", v}, {"g", g},
                                                                   {"beta", beta}};
  for (const auto& [name, in] : inputs) {
    MOE_CHECK(spans_disjoint(state, in),
              "delta_net: state overlaps " << name << ", expected separate buffers");
    if (std::string_view(name) != "v")  // o may be v itself: checked below
      MOE_CHECK(spans_disjoint(o, in),
                "delta_net: o overlaps " << name << ", expected separate buffers");
  }
  MOE_CHECK(spans_disjoint(state, o),
            "delta_net: o overlaps state, expected separate buffers");
  MOE_CHECK(o.data() == v.data() || spans_disjoint(o, v),
            "delta_net: o overlaps v without being the same buffer");
}

template <class Acc>
void delta_net_ref(const DeltaNetParams& p, std::span<const float> q, std::span<const float> k,
                   std::span<const float> v, std::span<const float> g, std::span<const float> beta,
                   std::span<float> state, std::span<float> o) {
  delta_net_validate(p, q, k, v, g, beta, state, o);
  const int64_t Hk = p.k_heads, Hv = p.v_heads, dk = p.key_dim, dv = p.value_dim;
  const Acc scale = Acc(p.out_scale);
  std::vector<Acc> s(dk);  // one state row in working precision
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      const int64_t hk = delta_net_qk_head(p, h);
      const float* qh = q.data() + (t * Hk + hk) * dk;
      const float* kh = k.data() + (t * Hk + hk) * dk;
      const float* vh = v.data() + (t * Hv + h) * dv;
      float* oh = o.data() + (t * Hv + h) * dv;
      // The factor from the log in working precision: expf in the f32 tier, exp in f64 for the truth.
      const Acc gh = p.decay_log ? std::exp(Acc(g[t * Hv + h])) : Acc(g[t * Hv + h]), bh = beta[t * Hv + h];
      for (int64_t vi = 0; vi < dv; ++vi) {
        float* row = state.data() + (h * dv + vi) * dk;
        for (int64_t ki = 0; ki < dk; ++ki) s[ki] = gh * Acc(row[ki]);
        Acc kv_mem = 0;
        for (int64_t ki = 0; ki < dk; ++ki) kv_mem = mul_add(s[ki], Acc(kh[ki]), kv_mem);
        const Acc delta = (Acc(vh[vi]) - kv_mem) * bh;
        for (int64_t ki = 0; ki < dk; ++ki) s[ki] = mul_add(Acc(kh[ki]), delta, s[ki]);
        Acc out = 0;
        for (int64_t ki = 0; ki < dk; ++ki) out = mul_add(s[ki], Acc(qh[ki]), out);
        for (int64_t ki = 0; ki < dk; ++ki) row[ki] = float(s[ki]);
        oh[vi] = float(out * scale);  // exact when out_scale is 1
      }
    }
  }
}

template void delta_net_ref<float>(const DeltaNetParams&, std::span<const float>, std::span<const float>,
                                   std::span<const float>, std::span<const float>, std::span<const float>,
                                   std::span<float>, std::span<float>);
template void delta_net_ref<double>(const DeltaNetParams&, std::span<const float>, std::span<const float>,
                                    std::span<const float>, std::span<const float>, std::span<const float>,
                                    std::span<float>, std::span<float>);

}  // namespace moe
