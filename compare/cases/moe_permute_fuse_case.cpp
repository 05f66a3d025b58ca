#include <cmath>
#include <string>

#include "compare/cases/act_model.h"
#include "compare/cases/bound_mode.h"
#include "compare/cases/case_util.h"
#include "spec/moe_permute_fuse_spec.h"

namespace moe::compare {

namespace {

// ---- The routed prefill batch of moe_permute_fuse and its two stages (compare/manifest/chains.cpp),
// the shapes and inputs of spec/moe_permute_fuse_spec.h. The GPU sees only the B routed experts,
// packed in bucket order:
//   gate.w / up.w [B, I, d*bits/32], down.w [B, d, I*bits/32] u32, .scales/.biases bf16
//   [B, rows, cols/64]; bucket_offsets [B + 1] u32 over rows; token_idx [rows] i32; weights
//   [rows] f32; x [T, d] f32; act [rows, I] f32; out [T, d] f32 in/out, pre-seeded with a
//   residual-like h, so an overwrite instead of an accumulation fails.
using Inputs = MoePermuteFuseInputs;

// One matrix kind of the routed experts, concatenated in bucket order.
void add_packed(OpCase& c, const std::string& name, const Inputs& in, const QuantStorage ExpertStorage::*m) {
  QuantStorage all;
  for (const ExpertStorage& e : in.store) {
    const QuantStorage& q = e.*m;
    all.w.insert(all.w.end(), q.w.begin(), q.w.end());
    all.scales.insert(all.scales.end(), q.scales.begin(), q.scales.end());
    all.biases.insert(all.biases.end(), q.biases.begin(), q.biases.end());
  }
  add_quant_tensors(c, name, all);
}

// The inputs of the gate and up projections.
void add_gate_up(OpCase& c, const Inputs& in) {
  add_packed(c, "gate", in, &ExpertStorage::gate);
  add_packed(c, "up", in, &ExpertStorage::up);
  c.tensors["x"] = f32_tensor(in.x);
}

// Row r's act_model: its bucket's gate and up over its token's x.
std::vector<ActModel> row_models(const Inputs& in, int64_t d) {
  std::vector<ActModel> out(in.b.token_idx.size());
  for_each_row(in.b, [&](int64_t r, size_t k, int64_t t) {
    out[size_t(r)] =
        act_model(in.store[k].gate.view(), in.store[k].up.view(), std::span(in.x).subspan(size_t(t * d), size_t(d)));
  });
  return out;
}

// ---- moe_permute_fuse, the whole op, run by the chain permute_gate_up -> permute_down_scatter
// (act [rows, I] poisoned in between, not decided: out carries every error).
// Truth: moe_permute_fuse_ref<double> (per row swiglu_expert_ref<double>: y_r rounded to f32;
// out = out_in + sum_r w_r y_r in f64, rounded to f32 once).
// Bound: moe_permute_fuse_bound under device_model() over the rows' Ey_r: y_gpu and y_T (the
// truth's f32 y) both lie within Ey_r of Wd h (swiglu_expert_case.cpp: one quant_rows pass over
// act_model's down_input_bound, plus u (|y| + mag) for y_T's f32 store, plus (I + 2) 2^-126).
void whole_case(OpCase& c, const MoePermuteFuseShape& s, const Inputs& in) {
  const int64_t d = s.p.hidden, I = s.p.inter;
  add_gate_up(c, in);
  add_packed(c, "down", in, &ExpertStorage::down);
  c.tensors["weights"] = f32_tensor(in.b.weights);
  c.tensors["out"] = f32_tensor(in.out_in);  // in/out: uploaded, not poisoned
  std::vector<float> out = in.out_in;
  moe_permute_fuse_ref<double>(s.p, in.b, in.experts, in.x, out);
  const std::vector<ActModel> models = row_models(in, d);
  const size_t n = models.size() * size_t(d);
  PermuteRowBounds rows{std::vector<double>(n), std::vector<double>(n)};
  std::vector<double> y(static_cast<size_t>(d)), mag(y.size());
  for_each_row(in.b, [&](int64_t r, size_t k, int64_t) {
    const std::vector<double> v = models[size_t(r)].down_input_bound();
    quant_rows(in.store[k].down.view(), v.data(), nullptr, mag.data());
    quant_rows(in.store[k].down.view(), models[size_t(r)].h.data(), y.data(), nullptr);
    for (int64_t i = 0; i < d; ++i) {
      const double ya = std::fabs(y[size_t(i)]);
      const double ey = mag[size_t(i)] + kU32 * (ya + mag[size_t(i)]) + double(I + 2) * kMinNormal32;
      rows.err[size_t(r * d + i)] = ey, rows.mag[size_t(r * d + i)] = ya + ey;
    }
  });
  set_reduction_output(c, "out", widen(out),
                       moe_permute_fuse_bound(s.p, s.variant.k, in.b, in.out_in, rows, out, device_model()));
  c.tensors["act"] = output_f32(int64_t(models.size()) * I);
  c.flops = 6.0 * double(models.size()) * double(I) * double(d);
}

// ---- permute_gate_up alone: act[r] = silu(gate_b x_t) * (up_b x_t), exactly expert_gate_up's
// act per row (expert_gate_up_case.cpp, add_act_output).
void gate_up_case(OpCase& c, const MoePermuteFuseShape& s, const Inputs& in) {
  add_gate_up(c, in);
  add_act_output(c, row_models(in, s.p.hidden), s.p.hidden);
}

// ---- permute_down_scatter alone: act = the f32-rounded truth of stage 1 (an input here);
// out = out_in + sum_r w_r (down_b act_r), truth in f64 (quant_rows' f64 sums, f64 weighted sum).
// Bound: moe_permute_fuse_bound under device_model() (the truth not rounded) over the rows: the GPU
// dot of I terms (spec/quant_dot_spec.h) is within gamma_{I+1} mag_r of the exact y_r, the f64
// truth within gamma64_{I+1} mag_r; plus (I + 2) 2^-126 for flushed subnormals.
void down_scatter_case(OpCase& c, const MoePermuteFuseShape& s, const Inputs& in) {
  const int64_t I = s.p.inter, d = s.p.hidden;
  const size_t n = in.b.token_idx.size() * size_t(d);
  add_packed(c, "down", in, &ExpertStorage::down);
  const std::vector<ActModel> models = row_models(in, d);
  std::vector<float> act;
  for (const ActModel& m : models)
    for (double h : m.h) act.push_back(float(h));
  c.tensors["act"] = f32_tensor(act);
  c.tensors["weights"] = f32_tensor(in.b.weights);
  c.tensors["out"] = f32_tensor(in.out_in);
  const double gi = sum_gamma(double(I + 1)), gi64 = sum_gamma(double(I + 1), 0x1.0p-53);
  std::vector<double> truth(in.out_in.begin(), in.out_in.end());
  PermuteRowBounds rows{std::vector<double>(n), std::vector<double>(n)};
  std::vector<double> y(static_cast<size_t>(d)), mag(y.size());
  for_each_row(in.b, [&](int64_t r, size_t k, int64_t t) {
    const std::vector<double> a(act.begin() + r * I, act.begin() + (r + 1) * I);
    quant_rows(in.store[k].down.view(), a.data(), y.data(), mag.data());
    for (int64_t i = 0; i < d; ++i) {
      truth[size_t(t * d + i)] += double(in.b.weights[size_t(r)]) * y[size_t(i)];
      rows.err[size_t(r * d + i)] = (gi + gi64) * mag[size_t(i)] + double(I + 2) * kMinNormal32;
      rows.mag[size_t(r * d + i)] = std::fabs(y[size_t(i)]) + gi * mag[size_t(i)];
    }
  });
  set_reduction_output(c, "out", truth, moe_permute_fuse_bound(s.p, s.variant.k, in.b, in.out_in, rows, {}, device_model()));
  c.flops = 2.0 * double(act.size()) * double(d);
}

// The cases of one op: the shapes it runs (runs), the buckets' tensors, then its own (build).
std::vector<OpCase> cases_of(const char* op, bool MoePermuteFuseVariant::*runs,
                             void (*build)(OpCase&, const MoePermuteFuseShape&, const Inputs&), bool rem, bool real,
                             uint64_t seed) {
  return build_cases(moe_permute_fuse_shapes(rem, real), [&](const MoePermuteFuseShape& s) -> std::optional<OpCase> {
    if (!(s.variant.*runs)) return std::nullopt;
    const Inputs in = moe_permute_fuse_inputs(s.p, s.variant, seed + s.seed_offset);
    OpCase c = new_case(op, moe_permute_fuse_label(s, in), seed + s.seed_offset);
    set_vars(c, s.p);
    const size_t rows = in.b.token_idx.size(), nb = in.b.expert_ids.size();
    c.vars["group_size"] = kExpertGroupSize, c.vars["k"] = double(s.variant.k);
    c.vars["buckets"] = double(nb), c.vars["rows"] = double(rows);
    c.params += " group_size=" + std::to_string(kExpertGroupSize) + " k=" + std::to_string(s.variant.k) +
                " buckets=" + std::to_string(nb) + " rows=" + std::to_string(rows);
    c.tensors["bucket_offsets"] = u32_tensor(in.b.offsets);
    HostTensor tok;
    tok.type = ElemType::I32, tok.elems = int64_t(rows);
    for (int32_t t : in.b.token_idx) tok.words.push_back(uint32_t(t));
    c.tensors["token_idx"] = tok;
    build(c, s, in);
    return c;
  });
}

}  // namespace

std::vector<OpCase> moe_permute_fuse_cases(bool rem, bool real, uint64_t seed) {
  return cases_of("moe_permute_fuse", &MoePermuteFuseVariant::whole, whole_case, rem, real, seed);
}
std::vector<OpCase> permute_gate_up_cases(bool rem, bool real, uint64_t seed) {
  return cases_of("permute_gate_up", &MoePermuteFuseVariant::gate_up, gate_up_case, rem, real, seed);
}
std::vector<OpCase> permute_down_scatter_cases(bool rem, bool real, uint64_t seed) {
  return cases_of("permute_down_scatter", &MoePermuteFuseVariant::down_scatter, down_scatter_case, rem, real, seed);
}

}  // namespace moe::compare
