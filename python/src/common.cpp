#include "common.h"

#include <sstream>

namespace moe::python {

void throw_type_error(const std::string& msg) { throw py::type_error(msg); }

void check_array(const py::handle& h, const py::dtype& want, size_t align, bool writable, std::string_view op,
                 std::string_view name) {
  const std::string what = std::string(op) + ": " + std::string(name);
  const std::string want_name = text(want);
  if (!py::isinstance<py::array>(h))
    throw py::type_error(what + " is a " + type_name(h) + ", expected a numpy.ndarray of " + want_name);
  const auto a = py::reinterpret_borrow<py::array>(h);
  // EquivTypes: the same type in the native byte order ('>f4' is not float32 here).
  if (!want.attr("__eq__")(a.dtype()).cast<bool>())
    throw py::type_error(what + " has dtype " + text(a.dtype()) + ", expected " + want_name);
  if (!(a.flags() & py::array::c_style)) {
    std::ostringstream s;
    s << what << " is not C-contiguous (strides";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s << ' ' << a.strides(i);
    s << "), expected a C-contiguous array: pass numpy.ascontiguousarray(" << name << ")";
    throw py::value_error(s.str());
  }
  if (a.size() > 0 && reinterpret_cast<uintptr_t>(a.data()) % align != 0)
    throw py::value_error(what + " is not aligned to " + std::to_string(align) +
                          " bytes, expected an aligned array: "
                          "pass a copy (numpy.array(" +
                          std::string(name) + "))");
  if (writable && !a.writeable())
    throw py::value_error(what + " is read-only, expected a writable array (it is written in place)");
}

py::array readonly_view(const py::dtype& dt, std::vector<py::ssize_t> shape, const void* data, py::handle base) {
  py::array a(dt, std::move(shape), std::vector<py::ssize_t>{}, data, base);
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

namespace {

// Dimension d of a 2-D array attribute, after checking it is 2-D.
py::ssize_t dim2(const py::array& a, int d, const std::string& what) {
  if (a.ndim() != 2) throw py::value_error(what + " has " + std::to_string(a.ndim()) + " dimensions, expected 2");
  return a.shape(d);
}

}  // namespace

QuantArg::QuantArg(const py::handle& q, std::string_view op, std::string_view what) {
  const std::string where = std::string(op) + ": " + std::string(what);
  for (const char* attr : {"w", "scales", "biases", "bits", "group_size"})
    if (!py::hasattr(q, attr))
      throw py::type_error(where + " is a " + type_name(q) + " without ." + attr +
                           ", expected a moeoracle.QuantizedMatrix (w, scales, biases, bits, group_size)");
  w = q.attr("w"), scales = q.attr("scales"), biases = q.attr("biases");
  try {
    m.bits = q.attr("bits").cast<int>();
    m.group_size = q.attr("group_size").cast<int>();
  } catch (const py::cast_error&) {
    throw py::type_error(where + ".bits or .group_size is not an int");
  }
  const std::span<const uint32_t> ws = in<uint32_t>(w, op, std::string(what) + ".w");
  const std::span<const uint16_t> ss = in<uint16_t>(scales, op, std::string(what) + ".scales");
  const std::span<const uint16_t> bs = in<uint16_t>(biases, op, std::string(what) + ".biases");
  if (m.bits != 2 && m.bits != 4 && m.bits != 8)
    throw py::value_error(where + " has bits=" + std::to_string(m.bits) + ", expected 2, 4 or 8");
  const auto wa = py::reinterpret_borrow<py::array>(w);
  m.rows = dim2(wa, 0, where + ".w");
  m.cols = dim2(wa, 1, where + ".w") * (32 / m.bits);
  m.w = ws.data(), m.scales = ss.data(), m.biases = bs.data();
  check_quant(m, op, what);
  for (const auto& [arr, name] : {std::pair{scales, ".scales"}, std::pair{biases, ".biases"}}) {
    const auto a = py::reinterpret_borrow<py::array>(arr);
    const py::ssize_t r = dim2(a, 0, where + name), c = dim2(a, 1, where + name);
    if (r != m.rows || c != m.groups_per_row())
      throw py::value_error(where + name + " has shape [" + std::to_string(r) + ", " + std::to_string(c) +
                            "], expected [" + std::to_string(m.rows) + ", " + std::to_string(m.groups_per_row()) +
                            "] (w is [" + std::to_string(m.rows) + ", " + std::to_string(wa.shape(1)) + "] at " +
                            std::to_string(m.bits) + " bits: cols " + std::to_string(m.cols) + ", group_size " +
                            std::to_string(m.group_size) + ")");
  }
}

Tier parse_tier(const std::string& name, std::string_view op) {
  if (name == "ref64") return Tier::Ref64;
  if (name == "ref32") return Tier::Ref32;
  if (name == "fast") return Tier::Fast;
  throw py::value_error(std::string(op) + ": tier '" + name + "', expected ref64 (the truth), ref32 or fast");
}

}  // namespace moe::python
