#include "spec/attention_spec.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>

#include "core/math.h"
#include "core/rng.h"
#include "spec/attention_bound.h"

namespace moe {

AttentionInputs attention_inputs(const AttentionParams& p, uint64_t seed) {
  const int64_t T = p.tokens, H = p.q_heads, D = p.head_dim, row = p.kv_heads * D;
  Rng rng(seed);
  AttentionInputs in;
  std::vector<double> gain(static_cast<size_t>(H));
  Rng rg = rng.fork(2);
  for (double& g : gain) g = 0.25 + 2.25 * rg.uniform01();
  in.q = rng.fork(1).normal_vec(T * H * D, 1.0);
  for (int64_t i = 0; i < T * H * D; ++i) in.q[size_t(i)] = float(in.q[size_t(i)] * gain[size_t((i / D) % H)]);
  in.gate = rng.fork(3).normal_vec(T * H * D, 2.0);
  const std::vector<float> mean = rng.fork(4).normal_vec(row, 0.5);
  in.k = keys_around_mean(rng.fork(5), T, mean);
  in.v = rng.fork(6).activations(T * row);
  in.k_cache = keys_around_mean(rng.fork(7), p.capacity, mean);
  in.v_cache = rng.fork(8).activations(p.capacity * row);
  for (int64_t i = p.past * row; i < p.capacity * row; ++i)
    in.k_cache[size_t(i)] = 1000.0f + float(i % 4096), in.v_cache[size_t(i)] = -7.0f;
  return in;
}

void attention_append(const AttentionParams& p, const AttentionInputs& in, std::vector<float>& kc,
                      std::vector<float>& vc) {
  const int64_t row = p.kv_heads * p.head_dim;
  kc = in.k_cache, vc = in.v_cache;
  std::copy(in.k.begin(), in.k.end(), kc.begin() + p.past * row);
  std::copy(in.v.begin(), in.v.end(), vc.begin() + p.past * row);
}

namespace {

struct Dims {
  const char* label;
  int64_t H, Hkv, D, past, T;  // T per call
  float scale = 0;             // 0: 1/sqrtf(D), the models' value
};

// GPU shapes take seed offsets 31 k, k counting them in this order within a list.
struct ShapeList {
  std::vector<AttentionShape> out;
  uint64_t k = 0;
  void gpu(const Dims& d, int64_t steps = 1) {
    AttentionParams p{steps * d.T, d.H, d.Hkv, d.D, d.past, d.past + steps * d.T + 2, d.scale};
    if (p.scale == 0) p.scale = 1.0f / std::sqrt(float(d.D));
    out.push_back({d.label, p, 31 * ++k, {steps, true}});
  }
};

const Dims kRemainder[] = {{"T 1 past 0 G2 D64", 4, 2, 64, 0, 1},     {"T 1 past 32 G3 D33", 3, 1, 33, 32, 1},
                           {"T 3 past 30 G1 D31", 2, 2, 31, 30, 3},   {"T 64 past 0 G4 D67", 8, 2, 67, 0, 64},
                           {"T 33 past 257 G3 D1", 3, 1, 1, 257, 33}, {"T 5 past 300 G2 D64 large scores", 4, 2, 64, 300, 5, 4.0f}};
// Head_dim 512 and 520 (shared q/k rows of 256), 130 q heads (more than 64 or 128), a kv length
// past 8192 (the VK FA_MAX_SEQ_LEN and Metal's GPU KV capacity; a score row in shared memory).
const Dims kLimit[] = {{"T 1 past 40 G2 D512", 4, 2, 512, 40, 1},
                       {"T 3 past 5 G1 D520", 2, 2, 520, 5, 3},
                       {"T 1 past 20 H130 G65 D64", 130, 2, 64, 20, 1},
                       {"T 1 past 8200 G2 D64", 4, 2, 64, 8200, 1}};
const Dims kDecodeD33{"decode 16 steps from past 0 G2 D33", 4, 2, 33, 0, 1};
const Dims kChunksD67{"prefill 3 chunks of 5 from past 2 G3 D67", 3, 1, 67, 2, 5};

// The CPU check's own shapes (seed offsets 0, 1, 2, ...; they keep the scale 0 of the op's default).
void add_cpu_shapes(std::vector<AttentionShape>& out, bool remainders, bool real) {
  uint64_t j = 0;
  auto add = [&](const std::string& label, int64_t H, int64_t Hkv, int64_t D, int64_t past, int64_t T, float scale = 0) {
    out.push_back({label, AttentionParams{T, H, Hkv, D, past, past + T + 2, scale}, j++, {1, false}});
  };
  if (remainders) {
    for (int64_t len : {1, 2, 31, 32, 33, 300}) {
      add("remainder len " + std::to_string(len) + " G2 D64", 4, 2, 64, len - 1, 1);
      add("remainder len " + std::to_string(len) + " G3 D33", 3, 1, 33, len - 1, 1);
    }
    add("remainder lens 1-3 G1 D31", 2, 2, 31, 0, 3);
    add("remainder lens 31-33 G3 D33", 3, 1, 33, 30, 3);
    add("chunk edge lens 1023-1026 G2 D64", 4, 2, 64, kAttentionFastChunk - 2, 4);
    add("three chunks lens 2048-2049 G3 D33", 3, 1, 33, 2 * kAttentionFastChunk - 1, 2);
    add("explicit scale 0.1 G1 D31", 2, 2, 31, 40, 2, 0.1f);
  }
  if (real) {
    for (int64_t past : {0, 4095, 8191})
      for (int64_t T : {1, 8}) {
        const std::string at = " past " + std::to_string(past) + " T " + std::to_string(T);
        add("A17B (H32 Hkv2 D256)" + at, 32, 2, 256, past, T);
        add("A3B (H16 Hkv2 D256)" + at, 16, 2, 256, past, T);
      }
    // kv_len 8191, the last length the Metal GPU path takes (docs/ops/attention.md "GPU attention
    // paths", docs/ops/verification.md "Attention lengths and positions"); 8192 above.
    add("A17B (H32 Hkv2 D256) kv_len 8191", 32, 2, 256, 8190, 1);
  }
}

}  // namespace

std::vector<AttentionShape> attention_shapes(bool remainders, bool real) {
  ShapeList s;
  if (remainders) {
    for (const Dims& d : kRemainder) s.gpu(d);
    s.gpu(kDecodeD33, 16);
    s.gpu({"decode 20 steps from past 30 G3 D67", 3, 1, 67, 30, 1}, 20);
  }
  if (real) {
    s.gpu({"A17B prefill 64 past 0", 32, 2, 256, 0, 64});
    s.gpu({"A3B prefill 16 past 100", 16, 2, 256, 100, 16});
    s.gpu({"A17B decode past 4095", 32, 2, 256, 4095, 1});
    s.gpu({"A17B decode 16 steps from past 1", 32, 2, 256, 1, 1}, 16);
    // The 4095 context once per seed as a single call above: 16 steps of it cost lavapipe ~10 s.
    s.gpu({"A3B decode 16 steps from past 100", 16, 2, 256, 100, 1}, 16);
    s.gpu({"A17B prefill 2 chunks of 8 from past 0", 32, 2, 256, 0, 8}, 2);
    s.gpu({"A3B prefill 2 chunks of 16 from past 100", 16, 2, 256, 100, 16}, 2);
  }
  if (remainders) {
    for (const Dims& d : kLimit) s.gpu(d);
    s.gpu(kChunksD67, 3);
  }
  add_cpu_shapes(s.out, remainders, real);
  return s.out;
}

std::vector<AttentionShape> attention_stage_shapes(bool remainders, bool real) {
  ShapeList s;
  if (remainders)
    for (const Dims& d : kRemainder) s.gpu(d);
  if (real) {
    s.gpu({"A17B decode past 4095", 32, 2, 256, 4095, 1});
    s.gpu({"A3B decode past 1", 16, 2, 256, 1, 1});
    s.gpu({"A17B prefill 64 past 0", 32, 2, 256, 0, 64});
    s.gpu({"A3B prefill 16 past 100", 16, 2, 256, 100, 16});
  }
  if (remainders)
    for (const Dims& d : kLimit) s.gpu(d);
  s.k = 100;  // kv_append's appends over several calls
  if (remainders) {
    s.gpu(kDecodeD33, 16);
    s.gpu(kChunksD67, 3);
  }
  if (real) {
    s.gpu({"A17B decode T 1, 16 steps from past 1", 32, 2, 256, 1, 1}, 16);
    s.gpu({"A3B decode T 1, 16 steps from past 100", 16, 2, 256, 100, 1}, 16);
    s.gpu({"A17B prefill 2 chunks of 8 from past 0", 32, 2, 256, 0, 8}, 2);
    s.gpu({"A3B prefill 2 chunks of 16 from past 100", 16, 2, 256, 100, 16}, 2);
  }
  return s.out;
}

double attention_gate_rel(double g, const PrecisionModel& m) {
  return (1 + m.exp_rel(g)) * (1 + m.u) * (1 + m.division_rel) * (1 + m.u) - 1;
}

std::vector<double> attention_bound(const AttentionParams& p, std::span<const float> q, std::span<const float> gate,
                                    std::span<const float> k_cache, std::span<const float> v_cache,
                                    std::span<const float> o, int64_t chunk, const PrecisionModel& m) {
  const int64_t T = p.tokens, H = p.q_heads, Hkv = p.kv_heads, D = p.head_dim, G = H / Hkv, row = Hkv * D;
  const double scale = p.scale != 0.0f ? double(p.scale) : 1.0 / std::sqrt(double(D)), gD = m.sum(double(D));
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<double> bound(size_t(T * H * D));
  const int64_t rows = p.past + T;
  for (int64_t g = 0; g < Hkv; ++g) {
    Mat K(rows, D), V(rows, D);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < D; ++d)
        K(r, d) = k_cache[size_t(r * row + g * D + d)], V(r, d) = v_cache[size_t(r * row + g * D + d)];
    const Mat Kabs = K.cwiseAbs(), Vabs = V.cwiseAbs();
    // Tokens are independent and write disjoint parts of `bound`.
#pragma omp parallel for schedule(dynamic) if (T > 1 && rows * D >= (1 << 16))
    for (int64_t t = 0; t < T; ++t) {
      const int64_t len = p.past + t + 1;
      Eigen::MatrixXd Q(D, G);
      for (int64_t j = 0; j < G; ++j)
        for (int64_t d = 0; d < D; ++d) Q(d, j) = q[size_t((t * H + g * G + j) * D + d)];
      const Eigen::MatrixXd S = (K.topRows(len) * Q) * scale;
      const Eigen::MatrixXd A = (Kabs.topRows(len) * Q.cwiseAbs()) * scale;
      const Eigen::VectorXd V1 = Vabs.topRows(len).colwise().sum().transpose();
      for (int64_t j = 0; j < G; ++j) {
        const double Amax = A.col(j).maxCoeff();
        const double Ds = gD * Amax * (1 + m.u) + m.u * Amax + double(D) * kMinNormal32 * scale;
        const SoftmaxRowBound w =
            softmax_row_bound(S.col(j), exponent_error(Ds, Amax, p.scale == 0.0f, chunk > 0, m), chunk, m);
        const Eigen::VectorXd err_a = weighted_sum_error(w, Vabs.topRows(len));
        const Eigen::VectorXd W = Vabs.topRows(len).transpose() * w.P;
        const int64_t base = (t * H + g * G + j) * D;
        for (int64_t d = 0; d < D; ++d) {
          const double gv = gate[size_t(base + d)], sig = sigmoid(gv), gr = attention_gate_rel(gv, m);
          bound[size_t(base + d)] = sig * (1 + gr) * err_a(d) + (gr + kU32) * sig * W(d) +
                                    2 * kMinNormal32 * (1 + V1(d)) + double(len) * kMinNormal32 +
                                    kU32 * std::fabs(double(o[size_t(base + d)]));
        }
      }
    }
  }
  return bound;
}

}  // namespace moe
