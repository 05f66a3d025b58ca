// Helpers shared by the per-op comparison cases (compare/cases/<op>_case.cpp).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compare/cases/cases.h"
#include "core/bf16.h"
#include "core/check_util.h"
#include "core/params.h"
#include "core/quant.h"

namespace moe::compare {

inline OpCase new_case(const std::string& op, const std::string& shape, uint64_t seed) {
  OpCase c;
  c.op = op, c.shape = shape, c.seed = seed;
  return c;
}

inline HostTensor f32_tensor(std::span<const float> v, bool output = false) {
  HostTensor t;
  t.type = ElemType::F32, t.elems = int64_t(v.size()), t.output = output;
  t.words.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) t.words[i] = std::bit_cast<uint32_t>(v[i]);
  return t;
}

inline HostTensor bf16_tensor(std::span<const bf16> v) {
  HostTensor t;
  t.type = ElemType::BF16, t.elems = int64_t(v.size());
  t.words.assign((v.size() + 1) / 2, 0u);
  for (size_t i = 0; i < v.size(); ++i) t.words[i / 2] |= uint32_t(v[i]) << (16 * (i % 2));
  return t;
}

inline HostTensor u32_tensor(std::span<const uint32_t> v) {
  HostTensor t;
  t.type = ElemType::U32, t.elems = int64_t(v.size()), t.words.assign(v.begin(), v.end());
  return t;
}

// The bytes of a ggml block-format tensor (GGUF), packed little-endian into u32 words (the last
// word zero-padded): a kernel binds them as its own block structs.
inline HostTensor block_tensor(std::span<const uint8_t> bytes) {
  HostTensor t;
  t.type = ElemType::U32;
  t.words.assign((bytes.size() + 3) / 4, 0u);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<uint8_t*>(t.words.data()));
  t.elems = int64_t(t.words.size());
  return t;
}

inline HostTensor output_f32(int64_t n) { return f32_tensor(std::vector<float>(size_t(n), 0.0f), true); }

// An i32 output (routing indices), poisoned before every step.
inline HostTensor output_i32(int64_t n) {
  HostTensor t;
  t.type = ElemType::I32, t.elems = n, t.output = true, t.words.assign(size_t(n), 0u);
  return t;
}

inline std::vector<double> widen(std::span<const float> v) { return std::vector<double>(v.begin(), v.end()); }

// f(begin, end) over [0, n) in blocks on every core: the f64 truth and the bounds of the timing
// shapes (a 248320-row lm_head, a 512-token matmul) are billions of terms. Each element's value
// depends only on its own row or token, so the result does not depend on the thread count.
template <class F>
void for_blocks(int64_t n, int64_t block, F f) {
  const int64_t blocks = (n + block - 1) / block;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < blocks; ++b) f(b * block, std::min(n, (b + 1) * block));
}

// One case per shape, built on every core (each shape draws its own inputs and truth: the cases
// are independent and the same whatever the thread count), in the shapes' order. build(shape)
// returns std::optional<OpCase>: nothing for a shape this judge does not run. An exception of a
// build is rethrown here (the first shape's, in order), not left to end the process.
template <class Shape, class Build>
std::vector<OpCase> build_cases(const std::vector<Shape>& shapes, Build build) {
  std::vector<std::optional<OpCase>> built(shapes.size());
  std::vector<std::exception_ptr> errors(shapes.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < shapes.size(); ++i) {
    try {
      built[i] = build(shapes[i]);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  std::vector<OpCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    if (built[i]) out.push_back(std::move(*built[i]));
  }
  return out;
}

template <class P>
void set_vars(OpCase& c, const P& p) {
  c.params = params_to_string(p);
  p.visit([&](const char* name, const auto& value) { c.vars[name] = double(value); });
}

// An output decided per element against `truth` within `bound` (sums, norms, softmax: anything
// rounded more than once), on a case or on one of its steps.
template <class Target>
void set_reduction_output(Target& c, const std::string& name, std::vector<double> truth, std::vector<double> bound) {
  OutputSpec s;
  s.name = name, s.kind = Kind::Reduction, s.bound = std::move(bound);
  c.outputs[name] = std::move(s);
  c.truth[name] = std::move(truth);
}

// The same for an f32 output tensor `name` of truth's size, allocated here.
inline void add_reduction_output(OpCase& c, const std::string& name, std::span<const float> truth,
                                 std::vector<double> bound) {
  c.tensors[name] = output_f32(int64_t(truth.size()));
  set_reduction_output(c, name, widen(truth), std::move(bound));
}

// An output compared bit-exactly against `truth` (data movement, single correctly rounded ops).
template <class Target>
void set_exact_output(Target& c, const std::string& name, std::vector<double> truth) {
  OutputSpec s;
  s.name = name, s.kind = Kind::Exact;
  c.outputs[name] = std::move(s);
  c.truth[name] = std::move(truth);
}

template <class Target>
void set_exact_output(Target& c, const std::string& name, std::span<const float> truth) {
  set_exact_output(c, name, widen(truth));
}

// A rotary embedding's tensors (rope, rope_yarn): the positions as the kernels' u32 buffer (each
// checked to fit), x, and the output y decided per element against `truth` within `bound`.
inline void set_rotary_tensors(OpCase& c, std::span<const int64_t> positions, std::span<const float> x,
                               std::span<const float> truth, std::vector<double> bound) {
  for (int64_t v : positions)
    MOE_CHECK(v >= 0 && v <= 0xffffffffLL, c.op << ": position " << v << " does not fit the kernels' u32 positions");
  const std::vector<uint32_t> pos32(positions.begin(), positions.end());
  c.tensors["positions"] = u32_tensor(pos32);
  c.tensors["x"] = f32_tensor(x);
  add_reduction_output(c, "y", truth, std::move(bound));
}

// The three arrays of a quantized matrix, bound as "<name>.w", "<name>.scales", "<name>.biases".
// A quantized matrix that lives elsewhere (a checkpoint's mmap): the same three arrays, copied.
inline void add_quant_tensors(OpCase& c, const std::string& name, const QuantMatrix& m) {
  const size_t words = size_t(m.weight_words()), groups = size_t(m.rows * m.groups_per_row());
  c.tensors[name + ".w"] = u32_tensor(std::span<const uint32_t>(m.w, words));
  c.tensors[name + ".scales"] = bf16_tensor(std::span<const bf16>(m.scales, groups));
  c.tensors[name + ".biases"] = bf16_tensor(std::span<const bf16>(m.biases, groups));
}

inline void add_quant_tensors(OpCase& c, const std::string& name, const QuantStorage& m) {
  c.tensors[name + ".w"] = u32_tensor(m.w);
  c.tensors[name + ".scales"] = bf16_tensor(m.scales);
  c.tensors[name + ".biases"] = bf16_tensor(m.biases);
}

// A router's outputs (router_topk, router_noaux): idx [T, K] decided as index sets by the
// near-tie rule on per-expert scores [T, E] within score_bound, w [T, K] (slots by weight) within
// w_bound and paired with idx (each weight must belong to its expert).
inline void set_routing_outputs(OpCase& c, int64_t K, std::span<const int32_t> idx, std::span<const float> w,
                                std::vector<double> scores, std::vector<double> score_bound,
                                std::vector<double> w_bound) {
  OutputSpec si, sw;
  si.name = "idx", si.kind = Kind::Indices, si.row = K;
  si.scores = std::move(scores), si.score_bound = std::move(score_bound);
  sw.name = "w", sw.kind = Kind::Reduction, sw.bound = std::move(w_bound);
  sw.paired_with = "idx", sw.row = K;
  c.tensors["idx"] = output_i32(int64_t(idx.size()));
  c.tensors["w"] = output_f32(int64_t(w.size()));
  c.outputs["idx"] = si;
  c.truth["idx"] = std::vector<double>(idx.begin(), idx.end());
  c.outputs["w"] = sw;
  c.truth["w"] = widen(w);
}

}  // namespace moe::compare
