// GGUF files from Python (oracle/gguf.h): the metadata as Python values, every tensor's raw bytes
// as a read-only numpy view of the mapped file (no copy), and the exact values of the types
// core/ggml_blocks.h decodes.
#include <memory>

#include "common.h"
#include "core/check.h"
#include "core/ggml_blocks.h"
#include "oracle/gguf.h"

namespace moe::python {
namespace {

py::object value_to_python(const GgufValue& v) {
  switch (v.type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
      return py::int_(v.u);
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64:
      return py::int_(v.i);
    case GgufType::F32: case GgufType::F64:
      return py::float_(v.f);
    case GgufType::BOOL:
      return py::bool_(v.b);
    case GgufType::STRING:
      return py::bytes(v.s).attr("decode")("utf-8", "replace");
    case GgufType::ARRAY: {
      py::list items;
      for (const GgufValue& e : v.items) items.append(value_to_python(e));
      return items;
    }
  }
  throw std::logic_error("value_to_python: unknown GGUF type");
}

// (version, alignment, [(key, type name, value)], [(name, ggml type, ne, raw uint8 view)]).
py::tuple read_gguf(const std::string& path) {
  std::shared_ptr<const GgufFile> file;
  {
    py::gil_scoped_release nogil;
    file = std::make_shared<const GgufFile>(path);
  }
  py::capsule owner(new std::shared_ptr<const GgufFile>(file),
                    [](void* p) { delete static_cast<std::shared_ptr<const GgufFile>*>(p); });
  py::list metadata, tensors;
  for (const auto& [key, v] : file->metadata()) {
    const std::string type = v.type == GgufType::ARRAY ? std::string("array<") + gguf_type_name(v.elem) + ">"
                                                       : gguf_type_name(v.type);
    metadata.append(py::make_tuple(key, type, value_to_python(v)));
  }
  for (const GgufTensor& t : file->tensors()) {
    const py::array raw = readonly_view(py::dtype("uint8"), {py::ssize_t(t.bytes)}, t.data, owner);
    tensors.append(py::make_tuple(t.name, std::string(t.type->name), t.ne, raw));
  }
  return py::make_tuple(file->version(), file->alignment(), metadata, tensors);
}

// The exact values of `n` elements of ggml type `type` (a name: "q4_K") in `raw`, as float64.
py::array_t<double> ggml_values(const std::string& type, const py::array_t<uint8_t, py::array::c_style>& raw,
                                int64_t n) {
  const GgmlType* t = ggml_type_named(type);
  MOE_CHECK(t, "ggml_values: unknown ggml type '" << type << "'");
  std::vector<double> out(size_t(std::max<int64_t>(n, 0)));
  {
    py::gil_scoped_release nogil;
    ggml_dequant_f64(t->id, {raw.data(), size_t(raw.size())}, n, out.data());
  }
  return to_numpy(std::move(out), {py::ssize_t(n)});
}

}  // namespace

void bind_gguf(py::module_& m) {
  m.def("read_gguf", &read_gguf, py::arg("path"));
  m.def("ggml_values", &ggml_values, py::arg("type"), py::arg("raw"), py::arg("n"));
  m.def("ggml_decodes", [](const std::string& type) {
    const GgmlType* t = ggml_type_named(type);
    return t && ggml_dequant_supported(t->id);
  }, py::arg("type"));
  m.def("ggml_type_id", [](const std::string& type) {
    const GgmlType* t = ggml_type_named(type);
    MOE_CHECK(t, "unknown ggml type '" << type << "'");
    return int64_t(t->id);
  }, py::arg("type"));
}

}  // namespace moe::python
