// Safetensors dumps from Python: read (every tensor a read-only numpy view into the mapped file,
// no copy), write (straight from the arrays' buffers, no copy), and the tap-by-tap diff of two
// dumps (oracle/dump_diff.h, what `moeoracle diff` prints) as data.
#include <memory>

#include "common.h"
#include "core/check.h"
#include "oracle/drift.h"
#include "oracle/dump_diff.h"
#include "oracle/judge.h"
#include "oracle/safetensors.h"

namespace moe::python {
namespace {

// numpy has no bfloat16: BF16 tensors come as their uint16 patterns.
py::dtype numpy_dtype(DType d) {
  switch (d) {
    case DType::F32:
      return py::dtype("float32");
    case DType::F64:
      return py::dtype("float64");
    case DType::F16:
      return py::dtype("float16");
    case DType::BF16:
      return py::dtype("uint16");
    case DType::U8:
      return py::dtype("uint8");
    case DType::I8:
      return py::dtype("int8");
    case DType::U16:
      return py::dtype("uint16");
    case DType::I16:
      return py::dtype("int16");
    case DType::U32:
      return py::dtype("uint32");
    case DType::I32:
      return py::dtype("int32");
    case DType::U64:
      return py::dtype("uint64");
    case DType::I64:
      return py::dtype("int64");
    case DType::BOOL:
      return py::dtype("bool");
  }
  throw std::logic_error("numpy_dtype: unknown DType");
}

// The safetensors dtype of a numpy array (uint16 as BF16 when `bf16`).
DType dump_dtype(const py::array& a, bool bf16, const std::string& name) {
  const char kind = a.dtype().kind();
  const py::ssize_t size = a.itemsize();
  if (a.dtype().byteorder() == '>')
    throw py::type_error("write_dump: tensor '" + name + "' is big-endian, expected native (little-endian) order");
  if (bf16) {
    if (kind != 'u' || size != 2)
      throw py::type_error("write_dump: tensor '" + name + "' is listed as bf16 but has dtype " + text(a.dtype()) +
                           ", expected uint16 bf16 patterns");
    return DType::BF16;
  }
  if (kind == 'f' && size == 4) return DType::F32;
  if (kind == 'f' && size == 8) return DType::F64;
  if (kind == 'f' && size == 2) return DType::F16;
  if (kind == 'b' && size == 1) return DType::BOOL;
  if (kind == 'u' || kind == 'i') {
    const bool u = kind == 'u';
    switch (size) {
      case 1:
        return u ? DType::U8 : DType::I8;
      case 2:
        return u ? DType::U16 : DType::I16;
      case 4:
        return u ? DType::U32 : DType::I32;
      case 8:
        return u ? DType::U64 : DType::I64;
    }
  }
  throw py::type_error("write_dump: tensor '" + name + "' has dtype " + text(a.dtype()) +
                       ", expected a float (16/32/64), integer (8..64 bits) or bool array");
}

// ([(name, array)] in file order, metadata). The arrays keep the mapped file alive.
py::tuple read_dump(const std::string& path) {
  std::shared_ptr<const SafetensorsFile> file;
  {
    py::gil_scoped_release nogil;
    file = std::make_shared<const SafetensorsFile>(path);
  }
  py::capsule owner(new std::shared_ptr<const SafetensorsFile>(file),
                    [](void* p) { delete static_cast<std::shared_ptr<const SafetensorsFile>*>(p); });
  py::list tensors;
  for (const std::string& name : file->names_in_file_order()) {
    const TensorInfo& t = *file->find(name);
    std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
    tensors.append(py::make_tuple(name, readonly_view(numpy_dtype(t.dtype), shape, t.data, owner)));
  }
  return py::make_tuple(tensors, file->metadata());
}

void write_dump(const std::string& path, const py::list& tensors, const std::map<std::string, std::string>& metadata,
                const std::vector<std::string>& bf16) {
  std::vector<TensorOut> out;
  for (const py::handle item : tensors) {
    const auto pair = item.cast<py::tuple>();
    const std::string name = pair[0].cast<std::string>();
    const py::object arr = pair[1];
    if (!py::isinstance<py::array>(arr))
      throw py::type_error("write_dump: tensor '" + name + "' is a " + type_name(arr) + ", expected a numpy.ndarray");
    const auto a = py::reinterpret_borrow<py::array>(arr);
    if (!(a.flags() & py::array::c_style))
      throw py::value_error("write_dump: tensor '" + name + "' is not C-contiguous: pass numpy.ascontiguousarray");
    const bool is_bf16 = std::find(bf16.begin(), bf16.end(), name) != bf16.end();
    const std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    out.push_back({name, dump_dtype(a, is_bf16, name), shape, a.data()});
  }
  for (const std::string& n : bf16) {
    bool found = false;
    for (const TensorOut& t : out) found = found || t.name == n;
    if (!found) throw py::value_error("write_dump: bf16 names tensor '" + n + "', which is not among the tensors");
  }
  // `tensors` holds the arrays for the whole call: their buffers stay valid without the GIL.
  py::gil_scoped_release nogil;
  write_safetensors(path, out, metadata, "the dump");
}

const char* kind_name(TapDiff::Kind k) {
  switch (k) {
    case TapDiff::Kind::Compared:
      return "compared";
    case TapDiff::Kind::Mismatch:
      return "mismatch";
    case TapDiff::Kind::OnlyInA:
      return "only_in_a";
    case TapDiff::Kind::OnlyInB:
      return "only_in_b";
    case TapDiff::Kind::Unmapped:
      return "unmapped";
  }
  return "";
}

py::dict diff(const std::string& a_path, const std::string& b_path, const std::string& map_path, double threshold) {
  DumpDiff d;
  {
    py::gil_scoped_release nogil;
    const SafetensorsFile a(a_path), b(b_path);
    std::optional<TapMap> map;
    if (!map_path.empty()) map = TapMap::load(map_path);
    d = diff_dumps(a, b, map ? &*map : nullptr, threshold);
  }
  py::list taps;
  for (const TapDiff& t : d.taps) {
    py::dict r;
    r["kind"] = kind_name(t.kind), r["tap"] = t.tap, r["b_name"] = t.b_name, r["token"] = t.token;
    r["shape"] = t.shape, r["problem"] = t.problem, r["max_abs_diff"] = t.max_abs_diff, r["max_abs_a"] = t.max_abs_a;
    r["rel"] = t.rel, r["cosine"] = t.cosine, r["special"] = t.special, r["failed"] = t.failed;
    taps.append(r);
  }
  py::dict out;
  out["taps"] = taps, out["first_failed"] = d.first_failed, out["compared"] = d.compared, out["failed"] = d.failed;
  return out;
}

// drift_stats (oracle/drift.h) of two [rows, vocab] float32 logits arrays, as a dict.
py::dict drift(const py::handle& base, const py::handle& test, const py::handle& tokens, int64_t rows, int64_t vocab) {
  const In<float> b(base, "drift", "base"), t(test, "drift", "test");
  const InOrNone<int32_t> tok(tokens, "drift", "tokens");
  DriftStats s;
  {
    py::gil_scoped_release nogil;
    s = drift_stats(b, t, rows, vocab, tok);
  }
  py::dict r;
  const auto est = [](const Estimate& e) { return py::make_tuple(e.mean, e.std_error); };
  r["rows"] = s.rows, r["vocab"] = s.vocab, r["scored"] = s.scored, r["nonfinite"] = s.nonfinite;
  r["kld"] = est(s.kld), r["kld_max"] = s.kld_max, r["kld_p999"] = s.kld_p999, r["kld_p99"] = s.kld_p99;
  r["kld_p90"] = s.kld_p90, r["kld_median"] = s.kld_median, r["kld_min"] = s.kld_min;
  r["same_top"] = est(s.same_top), r["first_top_change"] = s.first_top_change;
  r["dp"] = est(s.dp), r["dp_rms"] = s.dp_rms, r["dp_max"] = s.dp_max, r["dp_min"] = s.dp_min;
  r["ln_ppl_ratio"] = est(s.ln_ppl_ratio);
  r["kld_per_row"] = to_numpy(std::move(s.kld_per_row), {py::ssize_t(s.rows)});
  return r;
}

// judge_dump (oracle/judge.h) from files: the report as its JSON text (python/moeoracle/dumps.py
// parses it).
std::string judge(const std::string& model, const std::string& dump, const std::vector<int32_t>& tokens,
                  const std::string& map, const std::string& storage, double multiple, int64_t experts_per_token,
                  const std::string& qk_norm_eps) {
  MOE_CHECK(qk_norm_eps == "hf" || qk_norm_eps == "engine",
            "judge: qk_norm_eps '" << qk_norm_eps << "': expected hf or engine");
  JudgeOptions o;
  o.storage = parse_storage(storage), o.multiple = multiple;
  o.forward.experts_per_tok = experts_per_token;
  o.forward.qk_norm_eps = qk_norm_eps == "engine" ? QkNormEps::Engine : QkNormEps::Hf;
  py::gil_scoped_release nogil;
  return judge_report_json(judge_dump(model, dump, tokens, map, o));
}

}  // namespace

void bind_dumps(py::module_& m) {
  m.def("judge", &judge, py::arg("model"), py::arg("dump"), py::arg("tokens"), py::arg("map"), py::arg("storage"),
        py::arg("multiple"), py::arg("experts_per_token"), py::arg("qk_norm_eps"));
  m.def("drift", &drift, py::arg("base"), py::arg("test"), py::arg("tokens"), py::arg("rows"), py::arg("vocab"));
  m.def("read_dump", &read_dump, py::arg("path"));
  m.def("write_dump", &write_dump, py::arg("path"), py::arg("tensors"), py::arg("metadata"), py::arg("bf16"));
  m.def("diff", &diff, py::arg("a"), py::arg("b"), py::arg("map"), py::arg("threshold"));
}

}  // namespace moe::python
