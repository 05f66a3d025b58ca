#include "compare/run/layout.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>

#include "compare/decide/metrics.h"
#include "compare/run/elem_convert.h"
#include "core/check.h"

namespace moe::compare {

namespace {

// A layout quantity: an integral, non-negative value (elements can't be negative or fractional).
int64_t eval_count(const std::string& expr, const ExprVars& vars, const std::string& what) {
  double v = 0;
  try {
    v = eval_expr(expr, vars);
  } catch (const Error& e) {
    MOE_FAIL(what << ": " << e.what());
  }
  MOE_CHECK(std::isfinite(v) && std::floor(v) == v && v >= 0 && v < 9.0e15,
            what << " (" << expr << ") = " << format_value(v) << ", expected a non-negative integer");
  return int64_t(v);
}

// Strides given (evaluated), or row-major contiguous over `shape`.
std::vector<int64_t> eval_strides(const std::vector<std::string>& given, const std::vector<int64_t>& shape,
                                  const ExprVars& vars, const std::string& what) {
  std::vector<int64_t> st;
  if (given.empty()) {
    st.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
    return st;
  }
  for (size_t d = 0; d < given.size(); ++d) st.push_back(eval_count(given[d], vars, what + "[" + std::to_string(d) + "]"));
  return st;
}

uint32_t get_unit(const std::vector<uint32_t>& words, int64_t e, int bytes) {
  if (bytes == 4) return words[size_t(e)];
  return (words[size_t(e / 2)] >> (16 * (e % 2))) & 0xffffu;
}

void set_unit(std::vector<uint32_t>& words, int64_t e, int bytes, uint32_t v) {
  if (bytes == 4) {
    words[size_t(e)] = v;
    return;
  }
  uint32_t& w = words[size_t(e / 2)];
  const int sh = 16 * int(e % 2);
  w = (w & ~(0xffffu << sh)) | ((v & 0xffffu) << sh);
}

std::string tensor_list(const OpCase& c) {
  std::string s;
  for (const auto& [n, t] : c.tensors) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Whether the case compares tensor `name` (an output, or an in/out tensor such as a state).
bool compared(const OpCase& c, const std::string& name) {
  if (c.outputs.count(name)) return true;
  for (const CaseStep& st : c.steps)
    if (st.outputs.count(name)) return true;
  return false;
}

// The declared type of a view of tensor `t` (`name`): the tensor's own, or an exact conversion
// of an op input in an "in" binding (docs/manifests.md "Type conversion into a binding").
ElemType view_type(const ViewSpec& spec, const HostTensor& t, const std::string& name, Access access, const OpCase& c,
                   const std::string& what) {
  if (!spec.type_declared || spec.type == t.type) return t.type;
  const std::string both = what + " declares type " + elem_type_name(spec.type) + ", op '" + c.op + "' tensor '" + name +
                           "' is " + elem_type_name(t.type);
  if (t.output && access == Access::Out && t.type == ElemType::F32 && spec.type == ElemType::F16)
    return spec.type;  // the kernel stores its f32 result as f16 (narrowed)
  MOE_CHECK(convertible(t.type, spec.type), both << " (exact conversions: bf16 -> f32 | f16, f32 -> f16, i32 <-> u32; an "
                                                      << "f32 output may be stored as f16 through an \"out\" binding)");
  MOE_CHECK(access == Access::In && !t.output && !compared(c, name),
            both << ": only an op input read through an \"in\" binding may be converted; an output or in/out tensor "
                 << "keeps the op's type (the kernel would round what it writes)");
  return spec.type;
}

// A generated part: its geometry and its values at `vars` (index variables i0, i1, ... added).
PlacedView place_generated(const ViewSpec& spec, const ExprVars& vars, const std::string& what) {
  PlacedView v;
  v.generate = spec.generate, v.type = v.tensor_type = spec.type;
  for (size_t d = 0; d < spec.shape.size(); ++d)
    v.shape.push_back(eval_count(spec.shape[d], vars, what + " shape[" + std::to_string(d) + "]"));
  v.strides = eval_strides(spec.strides, v.shape, vars, what + " strides");
  v.tensor_strides = eval_strides({}, v.shape, vars, what + " strides");
  ExprVars at = vars;
  std::vector<std::string> names;  // i0, i1, ... (built by appends: GCC 12 warns falsely on "i" + to_string)
  for (size_t d = 0; d < v.shape.size(); ++d) {
    names.emplace_back(1, 'i');
    names.back() += std::to_string(d);
    MOE_CHECK(!vars.count(names.back()), what << " generate: the index variable " << names.back()
                                              << " would shadow a variable of that name");
  }
  const int bytes = elem_bytes(v.type);
  std::vector<uint32_t> values(size_t((v.count() * bytes + 3) / 4), 0);
  std::vector<int64_t> idx(v.shape.size(), 0);
  for (int64_t k = 0; k < v.count(); ++k) {
    std::string where = what + " generate (" + spec.generate + ") at [";
    for (size_t d = 0; d < idx.size(); ++d) {
      at[names[d]] = double(idx[d]);
      if (d) where += ", ";
      where += std::to_string(idx[d]);
    }
    double x = 0;
    try {
      x = eval_expr(spec.generate, at);
    } catch (const Error& e) {
      MOE_FAIL(where << "]: " << e.what());
    }
    const uint32_t u = generated_unit(x, v.type, where + "]");
    if (bytes == 4) values[size_t(k)] = u;
    else values[size_t(k / 2)] |= (u & 0xffffu) << (16 * (k % 2));
    for (size_t d = idx.size(); d-- > 0;)  // odometer, innermost fastest
      if (++idx[d] < v.shape[d]) break;
      else idx[d] = 0;
  }
  v.generated.push_back(std::move(values));
  return v;
}

// A tensor part's geometry: from, shape and strides evaluated and checked against the tensor.
PlacedView place_tensor_view(const ViewSpec& spec, const std::function<std::string(const std::string&)>& rename,
                             const ExprVars& vars, const OpCase& c, Access access, const std::string& what) {
  PlacedView v;
  v.tensor = rename(spec.tensor);
  auto it = c.tensors.find(v.tensor);
  MOE_CHECK(it != c.tensors.end(), what << " names tensor '" << spec.tensor << "'"
                                        << (v.tensor != spec.tensor ? " ('" + v.tensor + "' in op " + c.op + ")" : "")
                                        << "; op '" << c.op << "' has: " << tensor_list(c));
  const HostTensor& t = it->second;
  v.type = view_type(spec, t, v.tensor, access, c, what);
  v.narrowed = t.output && v.type != t.type;
  v.tensor_type = t.type;
  v.from = eval_count(spec.from, vars, what + " from");
  MOE_CHECK(v.from <= t.elems, what << " from = " << v.from << " lies past the end of '" << v.tensor << "' ("
                                    << t.elems << " elements)");
  if (spec.shape.empty()) {
    v.shape = {t.elems - v.from};
  } else {
    for (size_t d = 0; d < spec.shape.size(); ++d)
      v.shape.push_back(eval_count(spec.shape[d], vars, what + " shape[" + std::to_string(d) + "]"));
  }
  v.strides = eval_strides(spec.strides, v.shape, vars, what + " strides");
  v.tensor_strides = eval_strides(spec.tensor_strides, v.shape, vars, what + " tensor_strides");
  int64_t last = v.from;
  for (size_t d = 0; d < v.shape.size(); ++d) last += (v.shape[d] - 1) * v.tensor_strides[d];
  MOE_CHECK(v.count() == 0 || last < t.elems,
            what << " takes elements " << v.from << ".." << last << " of '" << v.tensor << "', which has " << t.elems
                 << " (declare a limit for the cases this layout cannot hold)");
  if (!spec.becomes.empty()) {
    v.becomes = rename(spec.becomes);
    auto b = c.tensors.find(v.becomes);
    MOE_CHECK(b != c.tensors.end(), what << " becomes '" << spec.becomes << "', which op '" << c.op
                                         << "' does not have; it has: " << tensor_list(c));
    MOE_CHECK(b->second.type == t.type && b->second.elems == t.elems,
              what << ": '" << v.tensor << "' (" << t.elems << " " << elem_type_name(t.type) << ") cannot become '"
                    << v.becomes << "' (" << b->second.elems << " " << elem_type_name(b->second.type) << ")");
  }
  return v;
}

}  // namespace

int64_t PlacedView::count() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

void PlacedView::for_each(const std::function<void(int64_t, int64_t)>& f) const {
  const int64_t n = count();
  if (n == 0) return;
  const size_t dims = shape.size();
  std::vector<int64_t> idx(dims, 0);
  int64_t t = from, e = offset;
  for (int64_t k = 0; k < n; ++k) {
    f(t, e);
    // Odometer over the shape, innermost dimension fastest.
    for (size_t d = dims; d-- > 0;) {
      e += strides[d], t += tensor_strides[d];
      if (++idx[d] < shape[d]) break;
      e -= strides[d] * shape[d], t -= tensor_strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

BufferLayout place_binding(const KernelEntry& k, const ManifestBinding& b,
                           const std::function<std::string(const std::string&)>& rename, const ExprVars& vars,
                           const OpCase& c, uint32_t poison, const std::string& where) {
  const std::string what = where + " '" + k.name + "': binding " + std::to_string(b.binding);
  MOE_CHECK(b.same_as < 0, what << " is an alias (same_as " << b.same_as << "): it has its root's buffer, no layout");
  BufferLayout L;
  L.fill = b.fill_zero ? 0u : fill_pattern(b.type, poison);
  if (!b.scratch.empty()) {
    const int64_t n = eval_count(b.scratch, vars, what + " scratch");
    MOE_CHECK(n >= 1, what << " scratch (" << b.scratch << ") = 0 elements");
    L.scratch = true, L.bytes = uint64_t(n) * elem_bytes(b.type);
    // A named scratch buffer is the same buffer for every kernel of a sequence that names it.
    L.key = b.scratch_name.empty() ? "scratch " + k.name + " " + std::to_string(b.binding)
                                   : "scratch named " + b.scratch_name;
    return L;
  }
  int64_t end_bytes = 0;  // just past the last placed element
  for (size_t p = 0; p < b.parts.size(); ++p) {
    const ViewSpec& spec = b.parts[p];
    const std::string pw = b.pack ? what + " pack[" + std::to_string(p) + "]" : what;
    PlacedView v;
    if (!spec.generate.empty()) {
      v = place_generated(spec, vars, pw);
    } else if (!spec.value.empty()) {
      v.type = v.tensor_type = spec.type, v.shape = {1}, v.strides = {1}, v.tensor_strides = {1};
      double x = 0;
      try {
        x = eval_expr(spec.value, vars);
      } catch (const Error& e) {
        MOE_FAIL(pw << " value: " << e.what());
      }
      v.value_bits = to_bits(x, elem_type_name(spec.type), pw + " value (" + spec.value + ")");
    } else {
      v = place_tensor_view(spec, rename, vars, c, b.access, pw);
    }
    v.what = pw;
    v.offset = eval_count(spec.offset, vars, pw + " offset");
    int64_t last = v.offset;
    for (size_t d = 0; d < v.shape.size(); ++d) last += (v.shape[d] - 1) * v.strides[d];
    if (v.count() > 0) end_bytes = std::max(end_bytes, (last + 1) * elem_bytes(v.type));
    L.views.push_back(std::move(v));
  }
  L.bytes = uint64_t(end_bytes);
  if (!b.size.empty()) {
    const int64_t n = eval_count(b.size, vars, what + " size");
    MOE_CHECK(n * elem_bytes(b.type) >= end_bytes,
              what << " size (" << b.size << ") = " << n << " elements (" << n * elem_bytes(b.type)
                   << " bytes), but its views place elements up to byte " << end_bytes
                   << " (declare a limit for the cases this layout cannot hold)");
    L.bytes = uint64_t(n) * elem_bytes(b.type);
  }
  L.bytes = (L.bytes + 3) / 4 * 4;
  // A written view of an in/out tensor (a state) is where the kernel leaves its new value; its
  // input value is read elsewhere (an "in" binding), so the two never share a buffer.
  const bool state_out = b.access == Access::Out &&
                         std::any_of(L.views.begin(), L.views.end(), [&](const PlacedView& v) {
                           return !v.tensor.empty() && !c.tensors.at(v.tensor).output && compared(c, v.tensor);
                         });
  if (b.plain() && L.views[0].type == L.views[0].tensor_type) {
    L.plain = true, L.key = std::string(state_out ? "written " : "") + "plain " + L.views[0].tensor;
    return L;
  }
  // Overlap: every 2-byte unit is placed at most once (a stride too small, two pack parts at
  // the same offset).
  L.covered.assign(size_t(L.bytes / 2), false);
  std::ostringstream key;
  key << (state_out ? "written " : "") << (b.uniform ? "uniform " : "view ") << L.bytes << " " << L.fill;
  for (const PlacedView& v : L.views) {
    const int units = elem_bytes(v.type) / 2;
    v.for_each([&](int64_t t, int64_t e) {
      for (int u = 0; u < units; ++u) {
        const size_t at = size_t(e * units + u);
        MOE_CHECK(!L.covered[at], what << ": element " << t << " of '"
                                       << (!v.generate.empty() ? "generate" : v.tensor.empty() ? "value" : v.tensor)
                                       << "' lands on buffer element " << e
                                       << ", which another element already holds (views overlap)");
        L.covered[at] = true;
      }
    });
    key << " | " << v.tensor << ">" << v.becomes << " " << elem_type_name(v.type) << "<" << elem_type_name(v.tensor_type)
        << " " << v.value_bits << " " << v.from << " @" << v.offset;
    if (!v.generate.empty()) key << " generate " << v.generate;
    for (size_t d = 0; d < v.shape.size(); ++d) key << " " << v.shape[d] << ":" << v.strides[d] << ":" << v.tensor_strides[d];
  }
  L.key = key.str();
  return L;
}

void write_view(const PlacedView& v, const std::vector<uint32_t>* words, std::vector<uint32_t>& image) {
  const int bytes = elem_bytes(v.type);
  if (v.tensor.empty() && v.generate.empty()) {
    set_unit(image, v.offset, 4, v.value_bits);
    return;
  }
  if (v.type == v.tensor_type) {
    v.for_each([&](int64_t t, int64_t e) { set_unit(image, e, bytes, get_unit(*words, t, bytes)); });
    return;
  }
  if (v.narrowed) {  // an output's place: f16 poison (a quiet NaN), whatever the words
    v.for_each([&](int64_t, int64_t e) { set_unit(image, e, bytes, kPoisonF16Pair & 0xffffu); });
    return;
  }
  check_conversion(v, *words, "");
  const int tbytes = elem_bytes(v.tensor_type);
  v.for_each([&](int64_t t, int64_t e) {
    set_unit(image, e, bytes, *convert_exact(get_unit(*words, t, tbytes), v.tensor_type, v.type));
  });
}

void check_conversion(const PlacedView& v, const std::vector<uint32_t>& words, const std::string& when) {
  if (v.type == v.tensor_type) return;
  const int tbytes = elem_bytes(v.tensor_type);
  v.for_each([&](int64_t t, int64_t) {
    const uint32_t u = get_unit(words, t, tbytes);
    MOE_CHECK(convert_exact(u, v.tensor_type, v.type),
              v.what << ": element " << t << " of tensor '" << v.tensor << "'" << when << " = "
                     << format_value(unit_value(u, v.tensor_type)) << " (" << elem_type_name(v.tensor_type)
                     << ") is not exactly representable in the binding's type " << elem_type_name(v.type));
  });
}

void read_view(const PlacedView& v, const std::vector<uint32_t>& image, std::vector<uint32_t>& words) {
  if (v.narrowed) {  // f16 widened to f32 exactly; an element still holding the f16 poison reads as unwritten
    v.for_each([&](int64_t t, int64_t e) {
      const uint32_t half = get_unit(image, e, 2);
      const float f = float(unit_value(half, ElemType::F16));
      set_unit(words, t, 4, half == (kPoisonF16Pair & 0xffffu) ? kPoison : std::bit_cast<uint32_t>(f));
    });
    return;
  }
  // view_type converts only inputs of "in" bindings and narrowed outputs (above).
  MOE_CHECK(v.type == v.tensor_type, v.what << ": tensor '" << v.tensor << "' read back through a converted view");
  const int bytes = elem_bytes(v.type);
  v.for_each([&](int64_t t, int64_t e) { set_unit(words, t, bytes, get_unit(image, e, bytes)); });
}

int64_t first_gap_write(const BufferLayout& L, const std::vector<uint32_t>& image) {
  for (size_t w = 0; w < image.size() && 2 * w < L.covered.size(); ++w) {
    uint32_t mask = 0;
    if (!L.covered[2 * w]) mask |= 0xffffu;
    if (2 * w + 1 >= L.covered.size() || !L.covered[2 * w + 1]) mask |= 0xffff0000u;
    if ((image[w] & mask) != (L.fill & mask)) return int64_t(w);
  }
  return -1;
}

}  // namespace moe::compare
