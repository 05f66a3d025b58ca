#include <cmath>
#include <string>

#include "compare/cases/act_model.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "core/expert_blob.h"
#include "core/rng.h"
#include "ops/expert_buckets.h"
#include "ops/moe_permute_fuse.h"

namespace moe::compare {

namespace {

// ---- The routed prefill batch shared by moe_permute_fuse and its two stages (chains.cpp):
// T tokens each routed to K distinct experts drawn from a pool of P of the E experts (P bounds
// the distinct experts B, i.e. the streamed weight buffers: lavapipe's 128 MiB), weights
// positive and renormalised per token like top-K routing; buckets from expert_buckets_ref
// (the CPU op's row order). The GPU sees only the B routed experts, packed in bucket order:
//   gate.w / up.w [B, I, d*bits/32], down.w [B, d, I*bits/32] u32, .scales/.biases bf16
//   [B, rows, cols/64]; bucket_offsets [B + 1] u32 over rows; token_idx [rows] i32; weights
//   [rows] f32; x [T, d] f32; act [rows, I] f32; out [T, d] f32 in/out, pre-seeded with a
//   residual-like h (activations), so an overwrite instead of an accumulation fails.
struct Batch {
  MoePermuteFuseParams p;
  int64_t k = 0;
  ExpertBuckets b;
  std::vector<ExpertStorage> store;   // [B], bucket order
  std::vector<ExpertWeights> experts; // [E], by expert id (the CPU op's view)
  std::vector<float> x, out_in;
};

Batch make_batch(int64_t T, int64_t K, int64_t E, int64_t P, int64_t d, int64_t I, int bits, uint64_t seed,
                 float x_scale) {
  Batch B;
  B.p.tokens = T, B.p.hidden = d, B.p.inter = I, B.p.bits = bits, B.p.experts = E;
  B.k = K;
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
    for (float& v : wt) sum += (v = rr.uniform(0.02f, 1.0f));
    for (int64_t i = 0; i < K; ++i) idx.push_back(pool[size_t(i)]), w.push_back(float(wt[size_t(i)] / sum));
  }
  ExpertBucketsParams bp;
  bp.tokens = T, bp.k = K, bp.experts = E;
  expert_buckets_ref<double>(bp, idx, w, B.b);
  B.experts.resize(size_t(E));
  // Down's columns: inter rounded up to the group (the same weights for the chain's cases, inter %
  // 64 == 0; permute_gate_up's odd-inter case never reads down).
  for (int32_t e : B.b.expert_ids)
    B.store.push_back(random_expert(rng.fork(100 + uint64_t(e)), d, I, bits, (I + 63) / 64 * 64));
  for (size_t j = 0; j < B.store.size(); ++j) B.experts[size_t(B.b.expert_ids[j])] = B.store[j].view();
  B.x = rng.fork(2).activations(T * d);
  for (float& v : B.x) v *= x_scale;
  B.out_in = rng.fork(3).activations(T * d);
  return B;
}

// One matrix kind of the routed experts, concatenated in bucket order.
void add_packed(OpCase& c, const std::string& name, const Batch& B, const QuantStorage ExpertStorage::*m) {
  QuantStorage all;
  for (const ExpertStorage& e : B.store) {
    const QuantStorage& q = e.*m;
    all.w.insert(all.w.end(), q.w.begin(), q.w.end());
    all.scales.insert(all.scales.end(), q.scales.begin(), q.scales.end());
    all.biases.insert(all.biases.end(), q.biases.begin(), q.biases.end());
  }
  add_quant_tensors(c, name, all);
}

OpCase batch_case(const std::string& op, const std::string& label, uint64_t seed, const Batch& B) {
  OpCase c = new_case(op, label, seed);
  set_vars(c, B.p);
  const int64_t rows = int64_t(B.b.token_idx.size()), nb = int64_t(B.b.expert_ids.size());
  c.vars["group_size"] = kExpertGroupSize, c.vars["k"] = double(B.k);
  c.vars["buckets"] = double(nb), c.vars["rows"] = double(rows);
  c.params += " group_size=" + std::to_string(kExpertGroupSize) + " k=" + std::to_string(B.k) +
              " buckets=" + std::to_string(nb) + " rows=" + std::to_string(rows);
  c.tensors["bucket_offsets"] = u32_tensor(B.b.offsets);
  HostTensor tok;
  tok.type = ElemType::I32, tok.elems = rows;
  for (int32_t t : B.b.token_idx) tok.words.push_back(uint32_t(t));
  c.tensors["token_idx"] = tok;
  return c;
}

// Row r's x as f64 and its bucket's expert.
std::vector<double> x_row(const Batch& B, int64_t r) {
  const int64_t d = B.p.hidden, t = B.b.token_idx[size_t(r)];
  return std::vector<double>(B.x.begin() + t * d, B.x.begin() + (t + 1) * d);
}
const ExpertStorage& row_expert(const Batch& B, int64_t r) {
  size_t b = 0;
  while (B.b.offsets[b + 1] <= uint64_t(r)) ++b;
  return B.store[b];
}

// ---- moe_permute_fuse, the whole op, run by the chain permute_gate_up -> permute_down_scatter
// (act [rows, I] poisoned in between, not decided: out carries every error).
// Truth: moe_permute_fuse_ref<double> (per row swiglu_expert_ref<double>: y_r rounded to f32;
// out = out_in + sum_r w_r y_r in f64, rounded to f32 once).
// Bound per out[t][i], first order in u, against the exact out_in + sum_r w_r Wd_r h_r (h exact):
//   per row r: y_gpu and y_T (the truth's f32 y) both lie within Ey_r of Wd h (swiglu_expert_case.cpp:
//   one quant_rows pass over v = (1 + gamma_{I+1}) gpu_h + ref32_h + gamma_{I+1} |h| +
//   gamma64_{I+1} (|h| + ref32_h), plus u (|y| + mag) for y_T's f32 store, plus (I + 2) 2^-126);
//   the weighted sum of K + 1 terms (out_in and K products w y, fma or not) in any order:
//   GPU |sum| error <= sum |w_r| Ey_r (1 + gamma_{K+1}) + gamma_{K+1} (|out_in| + sum |w_r| (|y_r| + Ey_r));
//   truth: the same Ey_r terms (already in Ey_r) + gamma64_{K+1} (...) + u |out_T| (final rounding).
//   Plus (K + 2) 2^-126 for flushed subnormal products and sums.
OpCase whole_case(const std::string& label, uint64_t seed, const Batch& B) {
  const int64_t T = B.p.tokens, d = B.p.hidden, I = B.p.inter, rows = int64_t(B.b.token_idx.size());
  OpCase c = batch_case("moe_permute_fuse", label, seed, B);
  add_packed(c, "gate", B, &ExpertStorage::gate);
  add_packed(c, "up", B, &ExpertStorage::up);
  add_packed(c, "down", B, &ExpertStorage::down);
  c.tensors["x"] = f32_tensor(B.x);
  c.tensors["weights"] = f32_tensor(B.b.weights);
  c.tensors["act"] = output_f32(rows * I);
  c.tensors["out"] = f32_tensor(B.out_in);  // in/out: uploaded, not poisoned
  std::vector<float> out = B.out_in;
  moe_permute_fuse_ref<double>(B.p, B.b, B.experts, B.x, out);
  const double gk = sum_gamma(double(B.k + 1)), gk64 = sum_gamma(double(B.k + 1), 0x1.0p-53);
  std::vector<double> err(size_t(T * d), 0.0), mag_sum(size_t(T * d), 0.0);  // sum |w| Ey, sum |w| (|y| + Ey)
  const size_t nd = static_cast<size_t>(d);
  std::vector<double> y(nd), mag(nd), unused(nd);
  for (int64_t r = 0; r < rows; ++r) {
    const ExpertStorage& e = row_expert(B, r);
    const std::vector<double> xd = x_row(B, r);
    const ActModel m = act_model(e.gate.view(), e.up.view(), xd.data());
    const std::vector<double> v = m.down_input_bound();
    quant_rows(e.down.view(), v.data(), unused.data(), mag.data());
    quant_rows(e.down.view(), m.h.data(), y.data(), nullptr);
    const double w = std::fabs(double(B.b.weights[size_t(r)]));
    const int64_t t = B.b.token_idx[size_t(r)];
    for (int64_t i = 0; i < d; ++i) {
      const double ey = mag[size_t(i)] + kU32 * (std::fabs(y[size_t(i)]) + mag[size_t(i)]) + double(I + 2) * kMinNormal32;
      err[size_t(t * d + i)] += w * ey;
      mag_sum[size_t(t * d + i)] += w * (std::fabs(y[size_t(i)]) + ey);
    }
  }
  OutputSpec s;
  s.name = "out", s.kind = Kind::Reduction;
  s.bound.resize(out.size());
  for (size_t j = 0; j < out.size(); ++j)
    s.bound[j] = err[j] * (1 + gk) + (gk + gk64) * (std::fabs(double(B.out_in[j])) + mag_sum[j]) +
                 kU32 * std::fabs(double(out[j])) + double(B.k + 2) * kMinNormal32;
  c.outputs["out"] = s;
  c.truth["out"] = widen(out);
  c.flops = 6.0 * double(rows) * double(I) * double(d);
  return c;
}

// ---- permute_gate_up alone: act[r] = silu(gate_b x_t) * (up_b x_t), exactly
// expert_gate_up's act per row (expert_gate_up_case.cpp): truth act_model's h (f64), bound
// gpu + ref64 per element plus the smallest normal (a flushed subnormal act).
OpCase gate_up_case(const std::string& label, uint64_t seed, const Batch& B) {
  const int64_t I = B.p.inter, d = B.p.hidden, rows = int64_t(B.b.token_idx.size());
  OpCase c = batch_case("permute_gate_up", label, seed, B);
  add_packed(c, "gate", B, &ExpertStorage::gate);
  add_packed(c, "up", B, &ExpertStorage::up);
  c.tensors["x"] = f32_tensor(B.x);
  c.tensors["act"] = output_f32(rows * I);
  OutputSpec s;
  s.name = "act", s.kind = Kind::Reduction;
  std::vector<double> truth(size_t(rows * I));
  s.bound.resize(truth.size());
  for (int64_t r = 0; r < rows; ++r) {
    const ExpertStorage& e = row_expert(B, r);
    const std::vector<double> xd = x_row(B, r);
    const ActModel m = act_model(e.gate.view(), e.up.view(), xd.data());
    for (int64_t i = 0; i < I; ++i) {
      truth[size_t(r * I + i)] = m.h[size_t(i)];
      s.bound[size_t(r * I + i)] = m.act_bound(size_t(i));
    }
  }
  c.outputs["act"] = s;
  c.truth["act"] = truth;
  c.flops = 4.0 * double(rows) * double(I) * double(d);
  return c;
}

// ---- permute_down_scatter alone: act = the f32-rounded truth of stage 1 (an input here);
// out = out_in + sum_r w_r (down_b act_r), truth in f64 (quant_rows' f64 sums, f64 weighted sum).
// Bound: per row, the GPU dot of I terms (weight rounding, product, any-order sum: matmul_q_case.cpp)
// is within gamma_{I+1} mag_r of the exact y_r (the f64 truth within gamma64_{I+1} mag_r); then the
// K + 1 terms (out_in, K products w y) in any order: gamma_{K+1} (|out_in| + sum |w| (|y| + gamma mag)),
// the truth's f64 sum gamma64_{K+1} of the same; plus (I + K + 4) 2^-126 for flushed subnormals.
OpCase down_scatter_case(const std::string& label, uint64_t seed, const Batch& B) {
  const int64_t T = B.p.tokens, I = B.p.inter, d = B.p.hidden, rows = int64_t(B.b.token_idx.size());
  OpCase c = batch_case("permute_down_scatter", label, seed, B);
  add_packed(c, "down", B, &ExpertStorage::down);
  std::vector<float> act(size_t(rows * I));
  for (int64_t r = 0; r < rows; ++r) {
    const ExpertStorage& e = row_expert(B, r);
    const std::vector<double> xd = x_row(B, r);
    const ActModel m = act_model(e.gate.view(), e.up.view(), xd.data());
    for (int64_t i = 0; i < I; ++i) act[size_t(r * I + i)] = float(m.h[size_t(i)]);
  }
  c.tensors["act"] = f32_tensor(act);
  c.tensors["weights"] = f32_tensor(B.b.weights);
  c.tensors["out"] = f32_tensor(B.out_in);
  const double gi = sum_gamma(double(I + 1)), gi64 = sum_gamma(double(I + 1), 0x1.0p-53);
  const double gk = sum_gamma(double(B.k + 1)), gk64 = sum_gamma(double(B.k + 1), 0x1.0p-53);
  std::vector<double> truth(B.out_in.begin(), B.out_in.end()), err(size_t(T * d), 0.0), msum(size_t(T * d), 0.0);
  const size_t ni = static_cast<size_t>(I), nd = static_cast<size_t>(d);
  std::vector<double> a(ni), y(nd), mag(nd);
  for (int64_t r = 0; r < rows; ++r) {
    const ExpertStorage& e = row_expert(B, r);
    for (int64_t i = 0; i < I; ++i) a[size_t(i)] = act[size_t(r * I + i)];
    quant_rows(e.down.view(), a.data(), y.data(), mag.data());
    const double w = double(B.b.weights[size_t(r)]);
    const int64_t t = B.b.token_idx[size_t(r)];
    for (int64_t i = 0; i < d; ++i) {
      const size_t j = size_t(t * d + i);
      truth[j] += w * y[size_t(i)];
      err[j] += std::fabs(w) * (gi + gi64) * mag[size_t(i)];
      msum[j] += std::fabs(w) * (std::fabs(y[size_t(i)]) + gi * mag[size_t(i)]);
    }
  }
  OutputSpec s;
  s.name = "out", s.kind = Kind::Reduction;
  s.bound.resize(truth.size());
  for (size_t j = 0; j < truth.size(); ++j)
    s.bound[j] = err[j] * (1 + gk) + (gk + gk64) * (std::fabs(double(B.out_in[j])) + msum[j]) +
                 double(I + B.k + 4) * kMinNormal32;
  c.outputs["out"] = s;
  c.truth["out"] = truth;
  c.flops = 2.0 * double(rows) * double(I) * double(d);
  return c;
}

enum class Which { Whole, GateUp, DownScatter };

std::vector<OpCase> cases_of(Which which, bool rem, bool real, uint64_t seed) {
  std::vector<OpCase> out;
  auto add = [&](const std::string& what, int64_t T, int64_t K, int64_t E, int64_t P, int64_t d, int64_t I, int bits,
                 uint64_t s, float xs = 1.0f) {
    const Batch B = make_batch(T, K, E, P, d, I, bits, s, xs);
    const std::string label = what + " T " + std::to_string(T) + " K " + std::to_string(K) + " E " +
                              std::to_string(E) + " B " + std::to_string(B.b.expert_ids.size()) + " d " +
                              std::to_string(d) + " I " + std::to_string(I) + " " + std::to_string(bits) + "-bit";
    if (which == Which::Whole) out.push_back(whole_case(label, s, B));
    if (which == Which::GateUp) out.push_back(gate_up_case(label, s, B));
    if (which == Which::DownScatter) out.push_back(down_scatter_case(label, s, B));
  };
  if (rem) {
    // d, I multiples of the group (64); buckets of 1 row to > 8 rows (gate_up's token tiles).
    add("remainder", 1, 2, 8, 8, 64, 64, 4, seed + 1);
    add("remainder", 3, 3, 8, 8, 128, 192, 4, seed + 2);
    add("remainder", 16, 4, 16, 16, 192, 64, 4, seed + 3);
    add("remainder", 64, 8, 32, 32, 64, 128, 4, seed + 4);
    add("remainder", 64, 10, 32, 12, 128, 64, 4, seed + 5);
    add("remainder", 3, 2, 8, 8, 128, 128, 8, seed + 6);
    add("remainder", 3, 3, 8, 8, 128, 128, 2, seed + 7);
    // Every token routed to the same K experts: full buckets (T rows each, 2 tiles + 3).
    add("edge same experts", 19, 4, 8, 4, 64, 128, 4, seed + 8);
    // |g| up to ~1000: exp(-g) overflows (silu -> -0) and vanishes (silu -> g).
    add("edge exp overflow (x * 300)", 3, 2, 8, 8, 64, 64, 4, seed + 9, 300.0f);
    // Past the limits engines size for: K 17 (above the models' 10 and Metal's 16 slots per
    // token), and one token (decode) with d or I past the 8192 floats of a staged row.
    add("remainder", 3, 17, 64, 40, 64, 64, 4, seed + 10);
    add("remainder decode", 1, 2, 8, 8, 8256, 64, 4, seed + 11);
    add("remainder decode", 1, 2, 8, 8, 64, 8256, 4, seed + 12);
    // K 64, the manifest's limit (k <= 64): a token has 64 rows, every slot of down_scatter's
    // shared row list (MAX_K) is used; a list one short drops a row's contribution.
    add("edge K 64 (the limit)", 2, 64, 64, 64, 64, 64, 4, seed + 13);
    // inter 67: not a multiple of any workgroup's rows (128 / subgroup size), so the last
    // workgroup's rows past inter must be skipped; the chain's down projection needs inter % 64
    // == 0, so this one is permute_gate_up's alone (a mutant `i > inter` survived without it).
    if (which == Which::GateUp) add("remainder rows", 3, 3, 8, 8, 128, 67, 4, seed + 14);
    // Decode (one token: permute_gate_up_decode) at 2 and 8 bits, and at inter 70 and 67 (2 and 1
    // rows per workgroup there) for permute_gate_up alone.
    if (which != Which::DownScatter) {
      add("remainder decode", 1, 3, 8, 8, 256, 192, 2, seed + 15);
      add("remainder decode", 1, 3, 8, 8, 192, 128, 8, seed + 16);
    }
    if (which == Which::GateUp) {
      add("remainder rows decode", 1, 2, 8, 8, 128, 70, 4, seed + 17);
      add("remainder rows decode", 1, 2, 8, 8, 128, 67, 4, seed + 18);
    }
  }
  if (real) {
    // docs/ops/models.md "Shape constants": A3B 256 experts top-8, d 2048 I 512; A17B 512 experts
    // top-10, d 4096 I 1024. At most 16 distinct experts (the packed buffers within lavapipe's 128 MiB).
    add("A3B experts", 1, 8, 256, 256, 2048, 512, 4, seed + 20);
    add("A3B experts", 16, 8, 256, 16, 2048, 512, 4, seed + 21);
    add("A17B experts", 3, 10, 512, 16, 4096, 1024, 4, seed + 22);
    add("A17B experts", 1, 10, 512, 512, 4096, 1024, 4, seed + 23);
    // Cogito-V2 / DeepSeek-V3 decode (docs/ops/models.md "Shape constants": 256 experts top-8, d 7168,
    // I 2048): rows of 64
    // quads, where the down stage takes a row in P 64 lanes and four chunks of two rows.
    add("DeepSeek-V3 experts", 1, 8, 256, 256, 7168, 2048, 4, seed + 24);
  }
  return out;
}

}  // namespace

std::vector<OpCase> moe_permute_fuse_cases(bool rem, bool real, uint64_t seed) {
  return cases_of(Which::Whole, rem, real, seed);
}
std::vector<OpCase> permute_gate_up_cases(bool rem, bool real, uint64_t seed) {
  return cases_of(Which::GateUp, rem, real, seed);
}
std::vector<OpCase> permute_down_scatter_cases(bool rem, bool real, uint64_t seed) {
  return cases_of(Which::DownScatter, rem, real, seed);
}

}  // namespace moe::compare
