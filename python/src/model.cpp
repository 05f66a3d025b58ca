// Models from Python: load an MLX or moeflux directory, run the forward (oracle/forward.h) on a
// CPU backend tier with taps gathered by glob (oracle/dump.h's DumpSink, as `moeoracle run
// --dump --taps` does), MFLX snapshots, synthetic fixtures (`moeoracle fixture`). Logits and taps
// are the forward's own vectors handed to numpy; weights are read-only views into the mapping.
#include <omp.h>

#include <filesystem>
#include <memory>

#include "common.h"
#include "core/check.h"
#include "oracle/dump.h"
#include "oracle/export_moeflux.h"
#include "oracle/forward.h"
#include "oracle/snapshot.h"
#include "oracle/synth.h"

namespace moe::python {
namespace {

using ModelPtr = std::shared_ptr<const Model>;

py::dict config_dict(const ModelConfig& c) {
  py::dict d;
  c.visit([&](const char* name, const auto& value) { d[name] = value; });
  py::list kinds, moe;
  for (LayerKind k : c.layer_kinds) kinds.append(k == LayerKind::Full ? "full" : k == LayerKind::Mla ? "mla" : "linear");
  for (bool b : c.layer_moe) moe.append(b);
  d["layer_kinds"] = kinds, d["layer_moe"] = moe, d["dense_inter"] = c.dense_inter;
  d["norm_topk_prob"] = c.norm_topk_prob, d["default_bits"] = c.default_bits, d["default_group"] = c.default_group;
  return d;
}

// A weight matrix as a QuantizedMatrix-shaped tuple of read-only views kept alive by the model.
py::tuple quant_views(const ModelPtr& model, const QuantMatrix& q) {
  py::capsule owner(new ModelPtr(model), [](void* p) { delete static_cast<ModelPtr*>(p); });
  const py::ssize_t rows = q.rows, groups = q.groups_per_row();
  return py::make_tuple(readonly_view(py::dtype::of<uint32_t>(), {rows, q.words_per_row()}, q.w, owner),
                        readonly_view(py::dtype::of<uint16_t>(), {rows, groups}, q.scales, owner),
                        readonly_view(py::dtype::of<uint16_t>(), {rows, groups}, q.biases, owner), q.bits,
                        q.group_size);
}

// A forward with its backend and state: one sequence, continued call after call.
class Session {
 public:
  Session(ModelPtr model, const std::string& backend, int64_t experts_per_token, const std::string& qk_norm_eps,
          int64_t capacity)
      : model_(std::move(model)),
        backend_(make_cpu_backend(backend)),
        fwd_(*model_, *backend_, options(experts_per_token, qk_norm_eps)),
        state_(ModelState::make(model_->config(), capacity)) {}

  // Runs `tokens` from the current position: one prefill call, or one call per token (decode).
  // Returns (logits [T, vocab], [(tap name, array)] in forward order, start position).
  py::tuple run(const std::vector<int32_t>& tokens, const py::object& taps, bool decode) {
    const ModelConfig& c = model_->config();
    for (size_t t = 0; t < tokens.size(); ++t)
      MOE_CHECK(tokens[t] >= 0 && tokens[t] < c.vocab,
                "run: token id " << tokens[t] << " at position " << t << " out of range [0, " << c.vocab << ")");
    MOE_CHECK(!tokens.empty(), "run: no tokens");
    std::unique_ptr<DumpSink> sink;
    if (!taps.is_none())
      sink = std::make_unique<DumpSink>(py::isinstance<py::str>(taps) ? split_commas(taps.cast<std::string>())
                                                                      : taps.cast<std::vector<std::string>>());
    const int64_t start = state_.pos, T = int64_t(tokens.size());
    std::vector<float> logits;
    {
      py::gil_scoped_release nogil;
      state_.reserve(c, state_.pos + T);
      if (decode) {
        logits.reserve(size_t(T * c.vocab));
        for (int64_t t = 0; t < T; ++t) {
          const std::vector<float> l = fwd_.run(std::span(tokens).subspan(size_t(t), 1), state_, sink.get());
          logits.insert(logits.end(), l.begin(), l.end());
        }
      } else {
        logits = fwd_.run(tokens, state_, sink.get());
      }
    }
    py::list tap_list;
    if (sink)
      for (auto& [name, t] : sink->take())
        tap_list.append(py::make_tuple(name, t.is_int ? py::object(to_numpy(std::move(t.i), {t.rows, t.cols}))
                                                      : py::object(to_numpy(std::move(t.f), {t.rows, t.cols}))));
    return py::make_tuple(to_numpy(std::move(logits), {T, c.vocab}), tap_list, start);
  }

  int64_t pos() const { return state_.pos; }
  void reset() { state_.reset(); }
  const char* backend() const { return backend_->name(); }
  int64_t experts_per_token() const { return fwd_.experts_per_tok(); }
  void save_snapshot(const std::string& path, int version) const {
    snapshot_save_file(path, model_->config(), state_, version);
  }
  void load_snapshot(const std::string& path, int64_t room) {
    snapshot_load_file(path, model_->config(), state_, room);
  }

 private:
  static ForwardOptions options(int64_t k, const std::string& eps) {
    MOE_CHECK(eps == "hf" || eps == "engine", "run: qk_norm_eps '" << eps << "', expected hf or engine");
    MOE_CHECK(k >= 0, "run: experts_per_token " << k << ", expected >= 0 (0: the model's)");
    ForwardOptions o;
    o.experts_per_tok = k;
    o.qk_norm_eps = eps == "engine" ? QkNormEps::Engine : QkNormEps::Hf;
    return o;
  }

  ModelPtr model_;
  std::unique_ptr<OpBackend> backend_;
  Forward fwd_;
  ModelState state_;
};

// The MLX-affine views (embed, lm_head, expert) of a model that has them; a GGUF model's tensors
// are read with read_gguf.
const QuantMatrix& mlx_only(const Model& md, const QuantMatrix& m) {
  MOE_CHECK(!md.is_gguf(), md.dir() << ": a GGUF model holds ggml block formats, not MLX affine matrices: read its "
                                    << "tensors with moeoracle.read_gguf");
  return m;
}

// `moeoracle fixture` (cli/fixture.cpp): MLX directly, moeflux by exporting a temporary MLX one.
void fixture(const std::string& preset, const std::string& out, const std::string& format, uint64_t seed) {
  const ModelConfig cfg = synthetic_preset(preset);
  py::gil_scoped_release nogil;
  write_synthetic(cfg, seed, out, format);
}

}  // namespace

void bind_model(py::module_& m) {
  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def(py::init([](const std::string& dir) {
             py::gil_scoped_release nogil;
             return std::shared_ptr<Model>(Model::load(dir));
           }),
           py::arg("dir"))
      .def_property_readonly("config", [](const Model& md) { return config_dict(md.config()); })
      .def_property_readonly("format",
                             [](const Model& md) {
                               return md.is_gguf() ? "gguf" : md.format() == SourceFormat::Mlx ? "mlx" : "moeflux";
                             })
      .def_property_readonly("dir", &Model::dir)
      .def("embed", [](const std::shared_ptr<Model>& md) { return quant_views(md, mlx_only(*md, md->embed().q)); })
      .def("lm_head", [](const std::shared_ptr<Model>& md) { return quant_views(md, mlx_only(*md, md->lm_head().q)); })
      .def(
          "expert",
          [](const std::shared_ptr<Model>& md, int64_t layer, int64_t e) {
            MOE_CHECK(layer >= 0 && layer < md->config().layers && e >= 0 && e < md->config().experts,
                      "expert: layer " << layer << " expert " << e << ", expected layer in [0, " << md->config().layers
                                       << ") and expert in [0, " << md->config().experts << ")");
            MOE_CHECK(md->layer(layer).moe, "expert: layer " << layer << " is a dense MLP layer, it has no experts");
            mlx_only(*md, QuantMatrix{});
            const ExpertWeights w = md->expert(layer, e);
            return py::make_tuple(quant_views(md, w.gate), quant_views(md, w.up), quant_views(md, w.down));
          },
          py::arg("layer"), py::arg("expert"));

  py::class_<Session>(m, "Session")
      .def(py::init([](const std::shared_ptr<Model>& md, const std::string& backend, int64_t k, const std::string& eps,
                       int64_t capacity) { return std::make_unique<Session>(md, backend, k, eps, capacity); }),
           py::arg("model"), py::arg("backend"), py::arg("experts_per_token"), py::arg("qk_norm_eps"),
           py::arg("capacity"))
      .def("run", &Session::run, py::arg("tokens"), py::arg("taps"), py::arg("decode"))
      .def_property_readonly("pos", &Session::pos)
      .def_property_readonly("backend", &Session::backend)
      .def_property_readonly("experts_per_token", &Session::experts_per_token)
      .def("reset", &Session::reset)
      .def("save_snapshot", &Session::save_snapshot, py::arg("path"), py::arg("version"))
      .def("load_snapshot", &Session::load_snapshot, py::arg("path"), py::arg("room"));

  m.def("fixture", &fixture, py::arg("preset"), py::arg("out"), py::arg("format"), py::arg("seed"));
  m.def("fixture_presets", &synthetic_preset_names);
  m.def(
      "set_threads",
      [](int n) {
        MOE_CHECK(n > 0, "set_threads: " << n << ", expected a positive count");
        omp_set_num_threads(n);
      },
      py::arg("n"), "Threads of the fast tier (OpenMP, process-wide)");
  m.def("get_threads", [] { return omp_get_max_threads(); });
}

}  // namespace moe::python
