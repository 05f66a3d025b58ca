// What every binding of the Python module shares: numpy arrays viewed as spans without a copy
// (C-contiguous, aligned, of the exact dtype, else a TypeError/ValueError naming the op, the
// tensor, what was expected and what was found), C++-owned vectors handed to numpy without a
// copy, params structs filled from a dict through their visit() field list, the op tiers, and
// bind_op, which binds an op from its argument names and a typed call of its tiers.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/quant.h"

namespace moe::python {

namespace py = pybind11;

// str(h) as a std::string: a dtype's name ("float32"), a type's repr.
inline std::string text(py::handle h) { return py::str(h).cast<std::string>(); }
// The name of an object's type, for messages ("list", "numpy.ndarray").
inline std::string type_name(py::handle h) { return py::type::of(h).attr("__name__").cast<std::string>(); }

// The checks every array argument passes; `writable` for outputs and in/out state.
void check_array(const py::handle& h, const py::dtype& want, size_t align, bool writable, std::string_view op,
                 std::string_view name);

// A C-contiguous array of T viewed in place (no copy); the array must outlive the span.
template <class T>
std::span<const T> in(const py::handle& h, std::string_view op, std::string_view name) {
  check_array(h, py::dtype::of<T>(), alignof(T), false, op, name);
  const auto a = py::reinterpret_borrow<py::array>(h);
  return {static_cast<const T*>(a.data()), size_t(a.size())};
}

// The same for an output or in/out argument: the array must also be writable.
template <class T>
std::span<T> out(const py::handle& h, std::string_view op, std::string_view name) {
  check_array(h, py::dtype::of<T>(), alignof(T), true, op, name);
  auto a = py::reinterpret_borrow<py::array>(h);
  return {static_cast<T*>(a.mutable_data()), size_t(a.size())};
}

// The array argument types of an op binding (bind_op below), the spans the kernels take: each is
// made from the Python object, the op's name and the argument's name, which its errors name.
template <class T>
struct In : std::span<const T> {
  In(const py::handle& h, std::string_view op, std::string_view name) : std::span<const T>(in<T>(h, op, name)) {}
};

// An optional input: None is an empty span.
template <class T>
struct InOrNone : std::span<const T> {
  InOrNone(const py::handle& h, std::string_view op, std::string_view name)
      : std::span<const T>(h.is_none() ? std::span<const T>() : in<T>(h, op, name)) {}
};

template <class T>
struct Out : std::span<T> {
  Out(const py::handle& h, std::string_view op, std::string_view name) : std::span<T>(out<T>(h, op, name)) {}
};

// A vector handed to numpy without a copy: the array owns it through a capsule.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
  py::ssize_t n = 1;
  for (py::ssize_t s : shape) n *= s;
  if (size_t(n) != v.size())
    throw std::logic_error("to_numpy: " + std::to_string(v.size()) + " values for " + std::to_string(n) + " elements");
  if (v.empty()) return py::array_t<T>(shape);  // numpy allocates (an empty vector may have no data pointer)
  auto* owner = new std::vector<T>(std::move(v));
  py::capsule base(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owner->data(), base);
}

// A read-only numpy view of `data` (C-contiguous) that keeps `base` alive: memory the C++ side
// owns or maps (a mapped dump, a loaded model's weights); numpy never writes into it.
py::array readonly_view(const py::dtype& dt, std::vector<py::ssize_t> shape, const void* data, py::handle base);

// A quantized matrix from a Python object with attributes w (uint32 [rows, cols*bits/32]),
// scales and biases (uint16 bf16 patterns, [rows, cols/group_size]), bits and group_size
// (moeoracle.QuantizedMatrix): views into its arrays, every size checked against the others.
// The Python objects are kept so that the views stay valid whatever the attributes are.
struct QuantArg {
  QuantArg(const py::handle& q, std::string_view op, std::string_view what);
  QuantMatrix m;
  py::object w, scales, biases;
};

// The op tiers: ref64 (the truth), ref32 (the engines' f32 order), fast.
enum class Tier { Ref64, Ref32, Fast };
Tier parse_tier(const std::string& name, std::string_view op);

// Calls stem##_ref<double>, stem##_ref<float> or stem##_fast with the same arguments.
#define MOE_PY_CALL_TIER(tier, stem, ...) \
  do {                                    \
    switch (tier) {                       \
      case ::moe::python::Tier::Ref64:    \
        stem##_ref<double>(__VA_ARGS__);  \
        break;                            \
      case ::moe::python::Tier::Ref32:    \
        stem##_ref<float>(__VA_ARGS__);   \
        break;                            \
      case ::moe::python::Tier::Fast:     \
        stem##_fast(__VA_ARGS__);         \
        break;                            \
    }                                     \
  } while (0)

[[noreturn]] void throw_type_error(const std::string& msg);

// A params struct from a dict of its fields (missing ones keep their defaults); an unknown key
// or a value of the wrong type is a TypeError naming the op and the field.
template <class P>
P params_from(const py::dict& d, std::string_view op) {
  P p;
  std::vector<std::string> names;
  p.visit([&](const char* name, const auto& value) {
    names.push_back(name);
    if (!d.contains(name)) return;
    using T = std::decay_t<decltype(value)>;
    // visit() hands out const references; p itself is not const, so writing through them is
    // defined, and the struct's one field list stays the only place the names are spelled.
    try {
      const_cast<T&>(value) = d[name].template cast<T>();
    } catch (const py::cast_error&) {
      throw_type_error(std::string(op) + ": parameter " + name + " is a " + type_name(d[name]) + ", expected " +
                       (std::is_same_v<T, bool>       ? "bool"
                        : std::is_floating_point_v<T> ? "float"
                                                      : "int"));
    }
  });
  for (const auto& item : d) {
    const std::string key = py::str(item.first);
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      std::string all;
      for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
      throw_type_error(std::string(op) + ": unknown parameter '" + key + "', expected one of " + all);
    }
  }
  return p;
}

// The fields of a params struct as a dict (defaults for documentation, reports).
template <class P>
py::dict params_dict(const P& p) {
  py::dict d;
  p.visit([&](const char* name, const auto& value) { d[name] = value; });
  return d;
}

// Registers _core.<stem>(tier, params, arrays...) and its params' defaults in _core.OP_PARAMS.
template <class P, class F>
void def_op(py::module_& m, const char* stem, F&& f, const char* doc) {
  m.def(stem, std::forward<F>(f), doc);
  m.attr("OP_PARAMS")[stem] = params_dict(P{});
}

// The Python type pybind checks an op argument against before the binding converts it: object,
// unless the argument type names another (a py::sequence of experts).
template <class A>
struct PyArg {
  using type = py::object;
};
template <class A>
  requires requires { typename A::py_type; }
struct PyArg<A> {
  using type = typename A::py_type;
};

namespace detail {

template <size_t N, class P, class... A>
void bind_op(py::module_& m, const char* op, std::array<const char*, N> names, void (*kernel)(Tier, const P&, A...),
             const char* doc) {
  static_assert(N == sizeof...(A), "one name per argument after the params");
  // The kernel runs without the GIL: an argument that holds Python objects must not be copied.
  static_assert(((std::is_reference_v<A> || std::is_trivially_copyable_v<A>) && ...),
                "take an argument holding Python objects (QuantArg, ...) by const reference");
  auto call = [op, names, kernel](const std::string& tier, const py::dict& params,
                                  const typename PyArg<std::remove_cvref_t<A>>::type&... args) {
    const P p = params_from<P>(params, op);
    const auto values = [&]<size_t... I>(std::index_sequence<I...>) {
      // A braced list converts left to right: the first bad argument is the one reported.
      return std::tuple<std::remove_cvref_t<A>...>{std::remove_cvref_t<A>(args, op, names[I])...};
    }(std::index_sequence_for<A...>{});
    const Tier t = parse_tier(tier, op);
    py::gil_scoped_release nogil;
    std::apply([&](const auto&... v) { kernel(t, p, v...); }, values);
  };
  def_op<P>(m, op, call, doc);
}

}  // namespace detail

// Binds _core.<op>(tier, params, args...) to `kernel`, a captureless callable
// (Tier, const Params&, A...) that calls the op's tier: params is a dict of Params' fields, each
// argument is converted to its kernel parameter type A (In<float>, Out<int32_t>, QuantArg, ...)
// under its name in `names`, then the tier is parsed and the kernel runs without the GIL.
template <size_t N, class F>
void bind_op(py::module_& m, const char* op, const char* const (&names)[N], F kernel, const char* doc) {
  detail::bind_op(m, op, std::to_array(names), +kernel, doc);
}

}  // namespace moe::python
