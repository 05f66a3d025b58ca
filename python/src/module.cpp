// moeoracle._core: the C++ side of the Python package (python/moeoracle). The bindings are split
// by responsibility: ops_*.cpp (every op in every tier), quant.cpp (MLX quantize/dequantize),
// model.cpp (models, the forward, taps, fixtures), dumps.cpp (safetensors dumps and their
// diff), gguf.cpp (GGUF files), compare.cpp (the Vulkan kernel gate).
#include <nlohmann/json.hpp>

#include "common.h"
#include "core/check.h"
#include "core/simd.h"

namespace moe::python {
void bind_ops(py::module_& m);
void bind_quant(py::module_& m);
void bind_model(py::module_& m);
void bind_dumps(py::module_& m);
void bind_gguf(py::module_& m);
void bind_compare(py::module_& m);
}  // namespace moe::python

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  m.doc() = "moeoracle's C++ core (use the moeoracle package)";
  // Every moe::Error (a bad shape, file, manifest, ...: the message names what was expected and
  // what was found) is a moeoracle.Error, a ValueError.
  static py::handle error_type = py::register_exception<moe::Error>(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const nlohmann::json::exception& e) {
      // A JSON file that does not parse or holds the wrong types (a manifest, a map, a config).
      PyErr_SetString(error_type.ptr(), e.what());
    }
  });
  m.attr("__version__") = MOE_VERSION;
  m.def("simd_target", &moe::simd_target, "The SIMD target the fast tier runs on (Highway's run-time pick)");
  m.def("simd_targets", &moe::simd_targets, "The SIMD targets this CPU and build offer");
  m.def("simd_pin", &moe::simd_pin, py::arg("name"), "Run the fast tier on this target from now on (\"\": the best)");
  moe::python::bind_ops(m);
  moe::python::bind_quant(m);
  moe::python::bind_model(m);
  moe::python::bind_dumps(m);
  moe::python::bind_gguf(m);
  moe::python::bind_compare(m);
}
