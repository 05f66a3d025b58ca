// Bindings of the routing and expert ops: router_topk, router_noaux, swiglu_expert, moe_combine,
// expert_buckets, moe_permute_fuse (calling convention: ops_quant.cpp). An expert is an object
// with attributes gate, up, down (moeoracle.Expert of QuantizedMatrix); expert buckets an object
// with expert_ids, offsets, token_idx, weights (moeoracle.ops.ExpertBuckets).
#include "common.h"
#include "ops_all.h"

namespace moe::python {
namespace {

struct ExpertArg {
  QuantArg gate, up, down;
  ExpertWeights view() const { return {gate.m, up.m, down.m}; }
};

ExpertArg expert_arg(const py::handle& e, std::string_view op, const std::string& what) {
  for (const char* attr : {"gate", "up", "down"})
    if (!py::hasattr(e, attr))
      throw py::type_error(std::string(op) + ": " + what + " is a " + type_name(e) + " without ." + attr +
                           ", expected a moeoracle.Expert (gate, up, down)");
  return {quant_arg(e.attr("gate"), op, what + ".gate"), quant_arg(e.attr("up"), op, what + ".up"),
          quant_arg(e.attr("down"), op, what + ".down")};
}

// The op's ExpertBuckets holds std::vectors: the four arrays are copied in (T*K rows, small).
ExpertBuckets buckets_arg(const py::handle& b, std::string_view op) {
  for (const char* attr : {"expert_ids", "offsets", "token_idx", "weights"})
    if (!py::hasattr(b, attr))
      throw py::type_error(std::string(op) + ": buckets is a " + type_name(b) + " without ." + attr +
                           ", expected moeoracle.ops.ExpertBuckets (from ops.expert_buckets)");
  const auto ids = in<int32_t>(b.attr("expert_ids"), op, "buckets.expert_ids");
  const auto off = in<uint32_t>(b.attr("offsets"), op, "buckets.offsets");
  const auto tok = in<int32_t>(b.attr("token_idx"), op, "buckets.token_idx");
  const auto w = in<float>(b.attr("weights"), op, "buckets.weights");
  return {{ids.begin(), ids.end()}, {off.begin(), off.end()}, {tok.begin(), tok.end()}, {w.begin(), w.end()}};
}

}  // namespace

void bind_router_topk(py::module_& m) {
  def_op<RouterTopkParams>(
      m, "router_topk",
      [](const std::string& tier, const py::dict& params, const py::object& logits, const py::object& idx,
         const py::object& w) {
        constexpr const char* op = "router_topk";
        const auto p = params_from<RouterTopkParams>(params, op);
        const auto ls = in<float>(logits, op, "logits");
        const auto is = out<int32_t>(idx, op, "idx");
        const auto ws = out<float>(w, op, "w");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, router_topk, p, ls, is, ws);
      },
      "idx, w [tokens, k]: softmax -> top-k -> renormalise");
}

void bind_router_noaux(py::module_& m) {
  def_op<RouterNoauxParams>(
      m, "router_noaux",
      [](const std::string& tier, const py::dict& params, const py::object& logits, const py::object& bias,
         const py::object& idx, const py::object& w) {
        constexpr const char* op = "router_noaux";
        const auto p = params_from<RouterNoauxParams>(params, op);
        const auto ls = in<float>(logits, op, "logits");
        const auto bs = in<float>(bias, op, "bias");
        const auto is = out<int32_t>(idx, op, "idx");
        const auto ws = out<float>(w, op, "w");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, router_noaux, p, ls, bs, is, ws);
      },
      "idx, w [tokens, k]: DeepSeek-V3 noaux_tc routing");
}

void bind_swiglu_expert(py::module_& m) {
  def_op<SwigluExpertParams>(
      m, "swiglu_expert",
      [](const std::string& tier, const py::dict& params, const py::object& expert, const py::object& x,
         const py::object& y) {
        constexpr const char* op = "swiglu_expert";
        const auto p = params_from<SwigluExpertParams>(params, op);
        const ExpertArg e = expert_arg(expert, op, "expert");
        const auto xs = in<float>(x, op, "x");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, swiglu_expert, p, e.view(), xs, ys);
      },
      "y [tokens, hidden] = down(silu(gate x) * up x); y may be x");
}

void bind_moe_combine(py::module_& m) {
  def_op<MoeCombineParams>(
      m, "moe_combine",
      [](const std::string& tier, const py::dict& params, const py::object& h_mid, const py::object& e,
         const py::object& w, const py::object& sh, const py::object& gamma, const py::object& out_arr) {
        constexpr const char* op = "moe_combine";
        const auto p = params_from<MoeCombineParams>(params, op);
        const auto hs = in<float>(h_mid, op, "h_mid");
        const auto es = in<float>(e, op, "e");
        const auto ws = in<float>(w, op, "w");
        const auto ss = in<float>(sh, op, "sh");
        const auto gs = in_or_empty<float>(gamma, op, "gamma");
        const auto os = out<float>(out_arr, op, "out");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, moe_combine, p, hs, es, ws, ss, gs, os);
      },
      "out [tokens, dim] = h_mid + sum_k w_k e_k + sigmoid(gamma) sh (gamma None: ungated)");
}

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
  def_op<MoePermuteFuseParams>(
      m, "moe_permute_fuse",
      [](const std::string& tier, const py::dict& params, const py::object& buckets, const py::sequence& experts,
         const py::object& x, const py::object& out_arr) {
        constexpr const char* op = "moe_permute_fuse";
        const auto p = params_from<MoePermuteFuseParams>(params, op);
        const ExpertBuckets b = buckets_arg(buckets, op);
        std::vector<ExpertArg> args;  // keeps the experts' arrays referenced
        std::vector<ExpertWeights> ew(experts.size());
        for (size_t i = 0; i < experts.size(); ++i) {
          if (experts[i].is_none()) continue;  // an expert no token is routed to may be absent
          args.push_back(expert_arg(experts[i], op, "experts[" + std::to_string(i) + "]"));
          ew[i] = args.back().view();
        }
        const auto xs = in<float>(x, op, "x");
        const auto os = out<float>(out_arr, op, "out");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, moe_permute_fuse, p, b, ew, xs, os);
      },
      "out [tokens, hidden] += the bucketed routed experts' SwiGLU outputs times their weights");
}

}  // namespace moe::python
