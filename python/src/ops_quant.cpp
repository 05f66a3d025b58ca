// Bindings of the quantized-weight ops: dequant, matvec_q, matmul_q, matvec_bf16, matvec_ggml, dequant_ggml, embedding,
// argmax.
// Each is _core.<op>(tier, params, arrays...): params is a dict of the op's params struct, the
// arrays are viewed in place, outputs are written into the arrays given (python/moeoracle/ops.py
// allocates them and infers the params from the shapes). bind_op (common.h) does the conversions.
#include "common.h"
#include "core/ggml_blocks.h"
#include "ops_all.h"

namespace moe::python {

void bind_dequant(py::module_& m) {
  bind_op(
      m, "dequant", {"W", "y"},
      [](Tier t, const DequantParams& p, const QuantArg& w, Out<float> y) { MOE_PY_CALL_TIER(t, dequant, p, w.m, y); },
      "y [rows, cols] = dequantised W");
}

void bind_matvec_q(py::module_& m) {
  bind_op(
      m, "matvec_q", {"W", "x", "y"},
      [](Tier t, const MatvecQParams& p, const QuantArg& w, In<float> x, Out<float> y) {
        MOE_PY_CALL_TIER(t, matvec_q, p, w.m, x, y);
      },
      "y [rows] = W x");
}

void bind_matmul_q(py::module_& m) {
  bind_op(
      m, "matmul_q", {"W", "X", "Y"},
      [](Tier t, const MatmulQParams& p, const QuantArg& w, In<float> x, Out<float> y) {
        MOE_PY_CALL_TIER(t, matmul_q, p, w.m, x, y);
      },
      "Y [tokens, rows] = X W^T");
}

void bind_matvec_bf16(py::module_& m) {
  bind_op(
      m, "matvec_bf16", {"W", "x", "y"},
      [](Tier t, const MatvecBf16Params& p, In<bf16> w, In<float> x, Out<float> y) {
        MOE_PY_CALL_TIER(t, matvec_bf16, p, w, x, y);
      },
      "y [rows] = W x, W bf16 patterns (uint16) [rows, cols]");
}

void bind_matvec_ggml(py::module_& m) {
  bind_op(
      m, "matvec_ggml", {"W", "X", "Y"},
      [](Tier t, const MatvecGgmlParams& p, In<uint8_t> w, In<float> x, Out<float> y) {
        const BlockMatrix W{uint32_t(p.type), w.data(), p.rows, p.cols};
        MOE_CHECK(p.type >= 0 && ggml_block_format(uint32_t(p.type)),
                  "matvec_ggml: type " << p.type << " is not a ggml format moeoracle decodes");
        MOE_CHECK(w.size() == W.bytes(), "matvec_ggml: W has " << w.size() << " bytes, type " << p.type << " ["
                                                               << p.rows << ", " << p.cols << "] needs " << W.bytes());
        MOE_PY_CALL_TIER(t, matvec_ggml, p, W, x, y);
      },
      "Y [tokens, rows] = X W^T, W the bytes of a ggml block-quantized [rows, cols] tensor (uint8)");
}

void bind_dequant_ggml(py::module_& m) {
  bind_op(
      m, "dequant_ggml", {"W", "y"},
      [](Tier t, const DequantGgmlParams& p, In<uint8_t> w, Out<float> y) {
        const BlockMatrix W{uint32_t(p.type), w.data(), p.rows, p.cols};
        MOE_CHECK(p.type >= 0 && ggml_block_format(uint32_t(p.type)),
                  "dequant_ggml: type " << p.type << " is not a ggml format moeoracle decodes");
        MOE_CHECK(w.size() == W.bytes(), "dequant_ggml: W has " << w.size() << " bytes, type " << p.type << " ["
                                                                << p.rows << ", " << p.cols << "] needs " << W.bytes());
        MOE_PY_CALL_TIER(t, dequant_ggml, p, W, y);
      },
      "y [rows, cols] f32 = the values of a ggml block-quantized [rows, cols] tensor (uint8 bytes)");
}

void bind_embedding(py::module_& m) {
  bind_op(
      m, "embedding", {"table", "ids", "y"},
      [](Tier t, const EmbeddingParams& p, const QuantArg& table, In<int32_t> ids, Out<float> y) {
        MOE_PY_CALL_TIER(t, embedding, p, table.m, ids, y);
      },
      "y [tokens, dim] = dequantised table rows ids");
}

void bind_argmax(py::module_& m) {
  bind_op(
      m, "argmax", {"x", "idx"},
      [](Tier t, const ArgmaxParams& p, In<float> x, Out<int32_t> idx) { MOE_PY_CALL_TIER(t, argmax, p, x, idx); },
      "idx [rows] = first index of each row's maximum");
}

}  // namespace moe::python
