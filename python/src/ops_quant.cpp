// Bindings of the quantized-weight ops: dequant, matvec_q, matmul_q, matvec_bf16, embedding, argmax.
// Each is _core.<op>(tier, params, arrays...): params is a dict of the op's params struct, the
// arrays are viewed in place, outputs are written into the arrays given (python/moeoracle/ops.py
// allocates them and infers the params from the shapes).
#include "common.h"
#include "ops_all.h"

namespace moe::python {

void bind_dequant(py::module_& m) {
  def_op<DequantParams>(
      m, "dequant",
      [](const std::string& tier, const py::dict& params, const py::object& W, const py::object& y) {
        constexpr const char* op = "dequant";
        const auto p = params_from<DequantParams>(params, op);
        const QuantArg w = quant_arg(W, op, "W");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, dequant, p, w.m, ys);
      },
      "y [rows, cols] = dequantised W");
}

void bind_matvec_q(py::module_& m) {
  def_op<MatvecQParams>(
      m, "matvec_q",
      [](const std::string& tier, const py::dict& params, const py::object& W, const py::object& x,
         const py::object& y) {
        constexpr const char* op = "matvec_q";
        const auto p = params_from<MatvecQParams>(params, op);
        const QuantArg w = quant_arg(W, op, "W");
        const auto xs = in<float>(x, op, "x");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, matvec_q, p, w.m, xs, ys);
      },
      "y [rows] = W x");
}

void bind_matmul_q(py::module_& m) {
  def_op<MatmulQParams>(
      m, "matmul_q",
      [](const std::string& tier, const py::dict& params, const py::object& W, const py::object& X,
         const py::object& Y) {
        constexpr const char* op = "matmul_q";
        const auto p = params_from<MatmulQParams>(params, op);
        const QuantArg w = quant_arg(W, op, "W");
        const auto xs = in<float>(X, op, "X");
        const auto ys = out<float>(Y, op, "Y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, matmul_q, p, w.m, xs, ys);
      },
      "Y [tokens, rows] = X W^T");
}

void bind_matvec_bf16(py::module_& m) {
  def_op<MatvecBf16Params>(
      m, "matvec_bf16",
      [](const std::string& tier, const py::dict& params, const py::object& W, const py::object& x,
         const py::object& y) {
        constexpr const char* op = "matvec_bf16";
        const auto p = params_from<MatvecBf16Params>(params, op);
        const auto ws = in<bf16>(W, op, "W");
        const auto xs = in<float>(x, op, "x");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, matvec_bf16, p, ws, xs, ys);
      },
      "y [rows] = W x, W bf16 patterns (uint16) [rows, cols]");
}

void bind_embedding(py::module_& m) {
  def_op<EmbeddingParams>(
      m, "embedding",
      [](const std::string& tier, const py::dict& params, const py::object& table, const py::object& ids,
         const py::object& y) {
        constexpr const char* op = "embedding";
        const auto p = params_from<EmbeddingParams>(params, op);
        const QuantArg tab = quant_arg(table, op, "table");
        const auto is = in<int32_t>(ids, op, "ids");
        const auto ys = out<float>(y, op, "y");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, embedding, p, tab.m, is, ys);
      },
      "y [tokens, dim] = dequantised table rows ids");
}

void bind_argmax(py::module_& m) {
  def_op<ArgmaxParams>(
      m, "argmax",
      [](const std::string& tier, const py::dict& params, const py::object& x, const py::object& idx) {
        constexpr const char* op = "argmax";
        const auto p = params_from<ArgmaxParams>(params, op);
        const auto xs = in<float>(x, op, "x");
        const auto is = out<int32_t>(idx, op, "idx");
        const Tier t = parse_tier(tier, op);
        py::gil_scoped_release nogil;
        MOE_PY_CALL_TIER(t, argmax, p, xs, is);
      },
      "idx [rows] = first index of each row's maximum");
}

}  // namespace moe::python
