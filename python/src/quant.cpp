// MLX affine quantization (core/mlx_quantize.h): quantize an f32 matrix to packed words and bf16
// scales/biases, requantize 4-bit experts to 2 bits, bf16 <-> f32, and the packed expert blob
// layout. The results' vectors are handed to numpy without a copy.
#include "common.h"
#include "core/bf16.h"
#include "core/expert_blob.h"
#include "core/mlx_quantize.h"

namespace moe::python {
namespace {

// QuantStorage -> (w, scales, biases, bits, group_size), the fields of moeoracle.QuantizedMatrix.
py::tuple storage_tuple(QuantStorage&& q) {
  const py::ssize_t rows = q.rows, words = q.rows > 0 ? py::ssize_t(q.w.size()) / rows : 0;
  const py::ssize_t groups = q.cols / q.group_size;
  return py::make_tuple(to_numpy(std::move(q.w), {rows, words}), to_numpy(std::move(q.scales), {rows, groups}),
                        to_numpy(std::move(q.biases), {rows, groups}), q.bits, q.group_size);
}

py::tuple quantize(const py::object& w, int bits, int group_size) {
  constexpr const char* op = "quantize";
  const auto ws = in<float>(w, op, "w");
  const auto a = py::reinterpret_borrow<py::array>(w);
  if (a.ndim() != 2)
    throw py::value_error(std::string(op) + ": w has " + std::to_string(a.ndim()) +
                          " dimensions, expected 2 [rows, cols]");
  QuantStorage q;
  {
    py::gil_scoped_release nogil;
    q = mlx_quantize(ws, a.shape(0), a.shape(1), bits, group_size);
  }
  return storage_tuple(std::move(q));
}

py::tuple requantize(const py::object& w4) {
  const QuantArg q(w4, "requantize_2bit", "w4");
  QuantStorage r;
  {
    py::gil_scoped_release nogil;
    r = requantize_2bit(q.m);
  }
  return storage_tuple(std::move(r));
}

// Round to nearest even, NaN kept a quiet NaN (bf16.h).
py::array_t<uint16_t> to_bf16(const py::object& x) {
  const auto xs = in<float>(x, "f32_to_bf16", "x");
  const auto a = py::reinterpret_borrow<py::array>(x);
  std::vector<uint16_t> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) out[i] = f32_to_bf16_rne(xs[i]);
  return to_numpy(std::move(out), std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
}

}  // namespace

void bind_quant(py::module_& m) {
  m.def("quantize", &quantize, py::arg("w"), py::arg("bits"), py::arg("group_size"),
        "MLX affine quantization of w [rows, cols] f32: (w uint32, scales uint16, biases uint16, bits, group_size)");
  m.def("requantize_2bit", &requantize, py::arg("w4"),
        "A 4-bit quantized matrix requantised to 2 bits as the engines' expert repacker does");
  m.def("f32_to_bf16", &to_bf16, py::arg("x"), "bf16 patterns (uint16) of x, rounded to nearest even");
  m.def("expert_blob_offsets", &expert_blob_offsets, py::arg("hidden"), py::arg("inter"), py::arg("bits"),
        "Byte offsets of gate.w, gate.s, gate.b, up.w, up.s, up.b, down.w, down.s, down.b and the blob size");
}

}  // namespace moe::python
