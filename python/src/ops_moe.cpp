// Bindings of the routing and expert ops: router_topk, router_noaux, swiglu_expert, moe_combine,
// expert_buckets, moe_permute_fuse, and the standalone glu and softmax (calling convention: ops_quant.cpp). An expert is an object
// with attributes gate, up, down (moeoracle.Expert of QuantizedMatrix); expert buckets an object
// with expert_ids, offsets, token_idx, weights (moeoracle.ops.ExpertBuckets).
#include "common.h"
#include "ops_all.h"

namespace moe::python {
namespace {

// `e` after checking it has gate, up and down (before any of them is converted).
const py::handle& expert_like(const py::handle& e, std::string_view op, std::string_view what) {
  for (const char* attr : {"gate", "up", "down"})
    if (!py::hasattr(e, attr))
      throw py::type_error(std::string(op) + ": " + std::string(what) + " is a " + type_name(e) + " without ." + attr +
                           ", expected a moeoracle.Expert (gate, up, down)");
  return e;
}

// An expert's three matrices; gate, the first member initialised, checks the object first.
struct ExpertArg {
  ExpertArg(const py::handle& e, std::string_view op, std::string_view what)
      : gate(expert_like(e, op, what).attr("gate"), op, std::string(what) + ".gate"),
        up(e.attr("up"), op, std::string(what) + ".up"),
        down(e.attr("down"), op, std::string(what) + ".down") {}
  ExpertWeights view() const { return {gate.m, up.m, down.m}; }
  QuantArg gate, up, down;
};

// A list of experts; None for an expert no token is routed to.
struct ExpertsArg {
  using py_type = py::sequence;  // pybind rejects anything else before the binding runs
  ExpertsArg(const py::sequence& experts, std::string_view op, std::string_view name) : views(experts.size()) {
    for (size_t i = 0; i < experts.size(); ++i) {
      if (experts[i].is_none()) continue;
      args.emplace_back(experts[i], op, std::string(name) + "[" + std::to_string(i) + "]");
      views[i] = args.back().view();
    }
  }
  std::vector<ExpertArg> args;  // keeps the experts' arrays referenced
  std::vector<ExpertWeights> views;
};

// The op's ExpertBuckets holds std::vectors: the four arrays are copied in (T*K rows, small).
struct BucketsArg {
  BucketsArg(const py::handle& b, std::string_view op, std::string_view name) {
    const std::string n(name);
    for (const char* attr : {"expert_ids", "offsets", "token_idx", "weights"})
      if (!py::hasattr(b, attr))
        throw py::type_error(std::string(op) + ": " + n + " is a " + type_name(b) + " without ." + attr +
                             ", expected moeoracle.ops.ExpertBuckets (from ops.expert_buckets)");
    const auto ids = in<int32_t>(b.attr("expert_ids"), op, n + ".expert_ids");
    const auto off = in<uint32_t>(b.attr("offsets"), op, n + ".offsets");
    const auto tok = in<int32_t>(b.attr("token_idx"), op, n + ".token_idx");
    const auto w = in<float>(b.attr("weights"), op, n + ".weights");
    buckets = {{ids.begin(), ids.end()}, {off.begin(), off.end()}, {tok.begin(), tok.end()}, {w.begin(), w.end()}};
  }
  ExpertBuckets buckets;
};

}  // namespace

void bind_router_topk(py::module_& m) {
  bind_op(
      m, "router_topk", {"logits", "idx", "w"},
      [](Tier t, const RouterTopkParams& p, In<float> logits, Out<int32_t> idx, Out<float> w) {
        MOE_PY_CALL_TIER(t, router_topk, p, logits, idx, w);
      },
      "idx, w [tokens, k]: softmax -> top-k -> renormalise");
}

void bind_router_noaux(py::module_& m) {
  bind_op(
      m, "router_noaux", {"logits", "bias", "idx", "w"},
      [](Tier t, const RouterNoauxParams& p, In<float> logits, In<float> bias, Out<int32_t> idx, Out<float> w) {
        MOE_PY_CALL_TIER(t, router_noaux, p, logits, bias, idx, w);
      },
      "idx, w [tokens, k]: DeepSeek-V3 noaux_tc routing");
}

void bind_swiglu_expert(py::module_& m) {
  bind_op(
      m, "swiglu_expert", {"expert", "x", "y"},
      [](Tier t, const SwigluExpertParams& p, const ExpertArg& expert, In<float> x, Out<float> y) {
        MOE_PY_CALL_TIER(t, swiglu_expert, p, expert.view(), x, y);
      },
      "y [tokens, hidden] = down(silu(gate x) * up x); y may be x");
}

void bind_moe_combine(py::module_& m) {
  bind_op(
      m, "moe_combine", {"h_mid", "e", "w", "sh", "gamma", "out"},
      [](Tier t, const MoeCombineParams& p, In<float> h_mid, In<float> e, In<float> w, In<float> sh,
         InOrNone<float> gamma, Out<float> out) { MOE_PY_CALL_TIER(t, moe_combine, p, h_mid, e, w, sh, gamma, out); },
      "out [tokens, dim] = h_mid + sum_k w_k e_k + sigmoid(gamma) sh (gamma None: ungated)");
}

// Bound by hand: its result is built into numpy arrays after the kernel, with the GIL held.
void bind_expert_buckets(py::module_& m) {
  def_op<ExpertBucketsParams>(
      m, "expert_buckets",
      [](const std::string& tier, const py::dict& params, const py::object& idx, const py::object& w) {
        constexpr const char* op = "expert_buckets";
        const auto p = params_from<ExpertBucketsParams>(params, op);
        const auto is = in<int32_t>(idx, op, "idx");
        const auto ws = in<float>(w, op, "w");
        const Tier t = parse_tier(tier, op);
        ExpertBuckets b;
        {
          py::gil_scoped_release nogil;
          MOE_PY_CALL_TIER(t, expert_buckets, p, is, ws, b);
        }
        const auto nb = py::ssize_t(b.expert_ids.size()), rows = py::ssize_t(b.token_idx.size());
        py::dict d;
        d["expert_ids"] = to_numpy(std::move(b.expert_ids), {nb});
        d["offsets"] = to_numpy(std::move(b.offsets), {nb + 1});
        d["token_idx"] = to_numpy(std::move(b.token_idx), {rows});
        d["weights"] = to_numpy(std::move(b.weights), {rows});
        return d;
      },
      "CSR buckets of routed rows per expert: dict of expert_ids, offsets, token_idx, weights");
}

void bind_moe_permute_fuse(py::module_& m) {
  bind_op(
      m, "moe_permute_fuse", {"buckets", "experts", "x", "out"},
      [](Tier t, const MoePermuteFuseParams& p, const BucketsArg& buckets, const ExpertsArg& experts, In<float> x,
         Out<float> out) { MOE_PY_CALL_TIER(t, moe_permute_fuse, p, buckets.buckets, experts.views, x, out); },
      "out [tokens, hidden] += the bucketed routed experts' SwiGLU outputs times their weights");
}

void bind_glu(py::module_& m) {
  bind_op(
      m, "glu", {"gate", "up", "y"},
      [](Tier t, const GluParams& p, In<float> gate, In<float> up, Out<float> y) {
        MOE_PY_CALL_TIER(t, glu, p, gate, up, y);
      },
      "y [rows, n] = act(gate) * up, act 0 SiLU, 1 tanh GELU, 2 erf GELU; y may be gate or up");
}

void bind_softmax(py::module_& m) {
  bind_op(
      m, "softmax", {"x", "mask", "y"},
      [](Tier t, const SoftmaxParams& p, In<float> x, InOrNone<float> mask, Out<float> y) {
        MOE_PY_CALL_TIER(t, softmax, p, x, mask, y);
      },
      "y [rows, cols] = softmax(x * scale + mask[r % mask_rows]) per row (mask None: mask_rows 0); y may be x");
}

}  // namespace moe::python
