#include "spec/moe_permute_fuse_spec.h"

#include <cmath>
#include <utility>

#include "core/rng.h"
#include "ops/swiglu_expert.h"

namespace moe {

std::vector<MoePermuteFuseShape> moe_permute_fuse_shapes(bool remainders, bool real) {
  std::vector<MoePermuteFuseShape> out;
  auto add = [&](std::string what, int64_t T, int64_t K, int64_t E, int64_t P, int64_t d, int64_t I, int bits,
                 uint64_t offset, MoePermuteFuseVariant v = {}) {
    v.k = K, v.pool = P;
    out.push_back({std::move(what), {T, d, I, bits, E}, offset, v});
  };
  const MoePermuteFuseVariant gate_up_only{.cpu = false, .whole = false, .down_scatter = false};
  if (remainders) {
    // d, I multiples of the group (64); buckets of 1 row to > 8 rows (gate_up's token tiles).
    add("remainder", 1, 2, 8, 8, 64, 64, 4, 1);
    add("remainder", 3, 3, 8, 8, 128, 192, 4, 2);
    add("remainder", 16, 4, 16, 16, 192, 64, 4, 3);
    add("remainder", 64, 8, 32, 32, 64, 128, 4, 4);
    add("remainder", 64, 10, 32, 12, 128, 64, 4, 5);
    add("remainder", 3, 2, 8, 8, 128, 128, 8, 6);
    add("remainder", 3, 3, 8, 8, 128, 128, 2, 7);
    // Every token routed to the same K experts: full buckets (T rows each, 2 tiles + 3).
    add("edge same experts", 19, 4, 8, 4, 64, 128, 4, 8);
    // |g| up to ~1000: exp(-g) overflows (silu -> -0) and vanishes (silu -> g).
    add("edge exp overflow (x * 300)", 3, 2, 8, 8, 64, 64, 4, 9, {.x_scale = 300.0f});
    // Past the limits engines size for: K 17 (above the models' 10 and Metal's 16 slots per
    // token), and one token (decode) with d or I past the 8192 floats of a staged row.
    add("remainder", 3, 17, 64, 40, 64, 64, 4, 10);
    add("remainder decode", 1, 2, 8, 8, 8256, 64, 4, 11);
    add("remainder decode", 1, 2, 8, 8, 64, 8256, 4, 12);
    // K 64, the manifest's limit (k <= 64): a token has 64 rows, every slot of down_scatter's
    // shared row list (MAX_K) is used; a list one short drops a row's contribution.
    add("edge K 64 (the limit)", 2, 64, 64, 64, 64, 64, 4, 13);
    // inter 67: not a multiple of any workgroup's rows (128 / subgroup size), so the last
    // workgroup's rows past inter must be skipped; the down projection needs inter % 64 == 0, so
    // this one is permute_gate_up's alone (a mutant `i > inter` survived without it).
    add("remainder rows", 3, 3, 8, 8, 128, 67, 4, 14, gate_up_only);
    // Decode (one token: permute_gate_up_decode) at 2 and 8 bits, and at inter 70 and 67 (2 and 1
    // rows per workgroup there) for permute_gate_up alone.
    add("remainder decode", 1, 3, 8, 8, 256, 192, 2, 15, {.down_scatter = false});
    add("remainder decode", 1, 3, 8, 8, 192, 128, 8, 16, {.down_scatter = false});
    add("remainder rows decode", 1, 2, 8, 8, 128, 70, 4, 17, gate_up_only);
    add("remainder rows decode", 1, 2, 8, 8, 128, 67, 4, 18, gate_up_only);
  }
  if (real) {
    // docs/ops/models.md "Shape constants": A3B 256 experts top-8, d 2048 I 512; A17B 512 experts
    // top-10, d 4096 I 1024. At most 16 distinct experts (the packed buffers within lavapipe's
    // 128 MiB).
    const MoePermuteFuseVariant gpu{.cpu = false};
    add("A3B experts", 1, 8, 256, 256, 2048, 512, 4, 20, gpu);
    add("A3B experts", 16, 8, 256, 16, 2048, 512, 4, 21, gpu);
    add("A17B experts", 3, 10, 512, 16, 4096, 1024, 4, 22, gpu);
    add("A17B experts", 1, 10, 512, 512, 4096, 1024, 4, 23, gpu);
    // Cogito-V2 / DeepSeek-V3 decode (docs/ops/models.md "Shape constants": 256 experts top-8,
    // d 7168, I 2048): rows of 64 quads, where the down stage takes a row in P 64 lanes and four
    // chunks of two rows.
    add("DeepSeek-V3 experts", 1, 8, 256, 256, 7168, 2048, 4, 24, gpu);
  }
  // The CPU's own: few experts, so buckets are shared by many tokens (P below E leaves ids empty).
  const MoePermuteFuseVariant cpu{.whole = false, .gate_up = false, .down_scatter = false};
  if (remainders) {
    add("remainder d 64 I 64 2-bit", 5, 3, 9, 4, 64, 64, 2, 0, cpu);
    add("remainder d 192 I 128 K 1", 7, 1, 5, 3, 192, 128, 4, 1, cpu);
    add("remainder d 320 I 64 8-bit", 3, 6, 6, 6, 320, 64, 8, 2, cpu);
    add("remainder 6 tokens K 10 of 12", 6, 10, 12, 12, 64, 64, 4, 3, cpu);
  }
  if (real) {
    // Every row costs a full expert (3 I d weights) per tier, so the CPU's real shapes keep few
    // rows: one A17B token with the engines' 4 experts, and an A3B chunk of 2 tokens with the
    // architectural 8 sharing at least 6 buckets (a pool of 10).
    add("A17B 1 token engine K 4", 1, 4, 512, 512, 4096, 1024, 4, 10, cpu);
    add("A3B 2 tokens K 8", 2, 8, 256, 10, 2048, 512, 4, 12, cpu);
  }
  return out;
}

MoePermuteFuseInputs moe_permute_fuse_inputs(const MoePermuteFuseParams& p, const MoePermuteFuseVariant& v,
                                             uint64_t seed) {
  const int64_t T = p.tokens, K = v.k, E = p.experts, P = v.pool, d = p.hidden, I = p.inter;
  MoePermuteFuseInputs in;
  Rng rng(seed);
  Rng rr = rng.fork(1);
  std::vector<int32_t> ids(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) ids[size_t(e)] = int32_t(e);
  for (int64_t i = 0; i < P; ++i) std::swap(ids[size_t(i)], ids[size_t(i + rr.below(E - i))]);  // the pool
  std::vector<int32_t> pool(ids.begin(), ids.begin() + P), idx;
  std::vector<float> w;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < K; ++i) std::swap(pool[size_t(i)], pool[size_t(i + rr.below(P - i))]);
    double sum = 0;
    std::vector<float> wt(static_cast<size_t>(K));
    for (float& x : wt) sum += (x = rr.uniform(0.02f, 1.0f));
    for (int64_t i = 0; i < K; ++i) idx.push_back(pool[size_t(i)]), w.push_back(float(wt[size_t(i)] / sum));
  }
  expert_buckets_ref<double>({T, K, E}, idx, w, in.b);
  in.experts.resize(size_t(E));
  for (int32_t e : in.b.expert_ids)
    in.store.push_back(random_expert(rng.fork(100 + uint64_t(e)), d, I, p.bits, (I + 63) / 64 * 64));
  for (size_t j = 0; j < in.store.size(); ++j) in.experts[size_t(in.b.expert_ids[j])] = in.store[j].view();
  in.x = rng.fork(2).activations(T * d);
  for (float& x : in.x) x *= v.x_scale;
  in.out_in = rng.fork(3).activations(T * d);
  return in;
}

std::string moe_permute_fuse_label(const MoePermuteFuseShape& s, const MoePermuteFuseInputs& in) {
  if (!s.variant.gpu()) return s.label;
  const MoePermuteFuseParams& p = s.p;
  return s.label + " T " + std::to_string(p.tokens) + " K " + std::to_string(s.variant.k) + " E " +
         std::to_string(p.experts) + " B " + std::to_string(in.b.expert_ids.size()) + " d " + std::to_string(p.hidden) +
         " I " + std::to_string(p.inter) + " " + std::to_string(p.bits) + "-bit";
}

PermuteCpuRowBounds moe_permute_fuse_cpu_rows(const MoePermuteFuseParams& p, const MoePermuteFuseInputs& in) {
  const int64_t d = p.hidden, rows = int64_t(in.b.token_idx.size());
  PermuteCpuRowBounds out;
  for (PermuteRowBounds* r : {&out.ref32, &out.fast}) r->err.resize(size_t(rows * d)), r->mag.resize(size_t(rows * d));
  const SwigluExpertParams sp{1, d, p.inter, p.bits};
  for_each_row(in.b, [&](int64_t r, size_t k, int64_t t) {
    const SwigluExpertBound eb =
        swiglu_expert_bound(sp, in.store[k].view(), std::span(in.x).subspan(size_t(t * d), size_t(d)));
    for (int64_t i = 0; i < d; ++i) {
      const size_t j = size_t(r * d + i);
      out.ref32.err[j] = eb.ref32[size_t(i)], out.ref32.mag[j] = std::fabs(eb.exact[size_t(i)]) + eb.ref32[size_t(i)];
      out.fast.err[j] = eb.fast[size_t(i)], out.fast.mag[j] = std::fabs(eb.exact[size_t(i)]) + eb.fast[size_t(i)];
    }
  });
  return out;
}

std::vector<double> moe_permute_fuse_bound(const MoePermuteFuseParams& p, int64_t K, const ExpertBuckets& b,
                                           std::span<const float> out_in, const PermuteRowBounds& rows,
                                           std::span<const float> truth, const PrecisionModel& m) {
  const int64_t d = p.hidden;
  const size_t n = size_t(p.tokens * d);
  const double g = m.sum(double(K + 1)), g64 = gamma_n(double(K + 1), 0x1.0p-53);
  std::vector<double> err(n, 0.0), mag(n);  // sum |w| err_r; |out_in| + sum |w| mag_r
  for (size_t j = 0; j < n; ++j) mag[j] = std::fabs(double(out_in[j]));
  for_each_row(b, [&](int64_t r, size_t, int64_t t) {
    const double w = std::fabs(double(b.weights[size_t(r)]));
    for (int64_t i = 0; i < d; ++i) {
      err[size_t(t * d + i)] += w * rows.err[size_t(r * d + i)];
      mag[size_t(t * d + i)] += w * rows.mag[size_t(r * d + i)];
    }
  });
  std::vector<double> bound(n);
  for (size_t j = 0; j < n; ++j)
    bound[j] = err[j] * (1 + g) + (g + g64) * mag[j] + (truth.empty() ? 0.0 : m.u * std::fabs(double(truth[j]))) +
               double(K + 2) * kMinNormal32;
  return bound;
}

}  // namespace moe
