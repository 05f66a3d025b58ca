#include "compare/model/model_compare.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>

#include "compare/manifest/bundled_manifest.h"
#include "compare/mutate/mutants.h"
#include "compare/run/case_file.h"
#include "compare/vk/runner.h"
#include "core/check.h"
#include "oracle/model.h"
#include "oracle/safetensors.h"
#include "oracle/state.h"

namespace moe::compare {
namespace {

// Every tap of a forward, in memory, rows appended per call.
class TapStore final : public TapSink {
 public:
  struct Tensor {
    int64_t rows = 0, cols = 0;
    std::vector<float> v;
  };
  bool wants(const std::string&) const override { return true; }
  void put(const std::string& name, std::span<const float> d, int64_t rows, int64_t cols) override {
    auto [it, fresh] = t_.try_emplace(name);
    if (fresh) order_.push_back(name), it->second.cols = cols;
    MOE_CHECK(it->second.cols == cols, "tap " << name << " changed width");
    it->second.rows += rows;
    it->second.v.insert(it->second.v.end(), d.begin(), d.end());
  }
  void put_i32(const std::string& name, std::span<const int32_t> d, int64_t rows, int64_t cols) override {
    std::vector<float> f(d.begin(), d.end());  // expert indices: exact in f32
    put(name, f, rows, cols);
  }
  const std::vector<std::string>& order() const { return order_; }
  const Tensor* find(const std::string& n) const {
    auto it = t_.find(n);
    return it == t_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, Tensor> t_;
  std::vector<std::string> order_;
};

int64_t tap_layer(const std::string& name) {
  const std::string pre = "model.layers.";
  if (name.rfind(pre, 0) != 0) return -1;
  return std::stoll(name.substr(pre.size()));
}

// Runs the forward over the tokens: a prefill of opt.prefill tokens, then opt.chunk tokens per call
// (1: decode; more: a teacher-forced corpus in batches, as llama-perplexity runs one).
void drive(const Model& model, OpBackend& be, GpuBackend* gpu, const ModelCompareOptions& opt, TapSink* taps) {
  ModelState state = ModelState::make(model.config(), int64_t(opt.tokens.size()));
  Forward fwd(model, be, opt.forward);
  const int64_t n = int64_t(opt.tokens.size());
  const int64_t first = std::min<int64_t>(std::max<int64_t>(opt.prefill, 1), n);
  for (int64_t at = 0; at < n;) {
    const int64_t len = at == 0 ? first : std::min(std::max<int64_t>(opt.chunk, 1), n - at);
    if (gpu) gpu->begin(at, len);
    fwd.run(std::span<const int32_t>(opt.tokens).subspan(size_t(at), size_t(len)), state, taps);
    at += len;
  }
}

// A forward's taps as a dump. The GPU's (`bisect --mode free --dump`): what an engine's tap writer
// would write, for `judge` to hold to the truth module by module; the truth run's (--truth-dump):
// the base `drift` measures it against. Expert indices as i32.
void write_dump(const ModelCompareOptions& opt, const std::string& path, const std::string& backend,
                const TapStore& taps) {
  std::vector<std::vector<int32_t>> ints;
  std::vector<TensorOut> outs;
  ints.reserve(taps.order().size());
  for (const std::string& name : taps.order()) {
    const TapStore::Tensor* t = taps.find(name);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".idx") == 0) {
      ints.emplace_back(t->v.begin(), t->v.end());
      outs.push_back({name, DType::I32, {t->rows, t->cols}, ints.back().data()});
    } else {
      outs.push_back({name, DType::F32, {t->rows, t->cols}, t->v.data()});
    }
  }
  std::string toks;
  for (size_t i = 0; i < opt.tokens.size(); ++i) {
    if (i) toks += ',';
    toks += std::to_string(opt.tokens[i]);
  }
  write_safetensors(path, outs,
                    {{"model", opt.model},
                     {"tokens", toks},
                     {"start_pos", "0"},
                     {"backend", backend},
                     {"kernels", opt.kernels.empty() ? "bundled" : opt.kernels}});
}

// `--mutant "<kernel> <mutant id>"` or `"<kernel> #<index>"`: that GLSL kernel compiled from one
// mutant of its own source (compare/mutate/mutants.h, the ids `mutate` reports), the rest as
// written. Returns "<kernel> <mutant id>".
std::string plant_mutant(Manifest& m, const std::string& spec) {
  const size_t sp = spec.find(' ');
  MOE_CHECK(sp != std::string::npos && sp + 1 < spec.size(),
            "bisect: --mutant '" << spec << "': expected \"<kernel> <mutant id>\" or \"<kernel> #<index>\"");
  const std::string name = spec.substr(0, sp), id = spec.substr(sp + 1);
  const auto k = std::find_if(m.kernels.begin(), m.kernels.end(), [&](const KernelEntry& e) { return e.name == name; });
  MOE_CHECK(k != m.kernels.end(), "bisect: --mutant: the manifest has no kernel '" << name << "'");
  MOE_CHECK(k->from_glsl, "bisect: --mutant: kernel '" << name << "' is SPIR-V; mutants are made from GLSL");
  const std::vector<Mutant> all = make_mutants(k->files->read(k->source_path, "bisect: the kernel's GLSL"));
  const Mutant* mu = nullptr;
  if (id[0] == '#') {
    const size_t i = size_t(std::strtoull(id.c_str() + 1, nullptr, 10));
    MOE_CHECK(i < all.size(), "bisect: --mutant: kernel '" << name << "' has " << all.size() << " mutants; no #" << i);
    mu = &all[i];
  } else {
    for (const Mutant& x : all)
      if (x.id() == id) mu = &x;
    MOE_CHECK(mu, "bisect: --mutant: kernel '" << name << "' has no mutant '" << id << "'");
  }
  k->spirv = compile_glsl(mu->source, k->source_path, *k);
  reflect_and_check(*k, "bisect: mutant " + mu->id() + " of " + name);
  return name + " " + mu->id();
}

}  // namespace

ModelCompareResult run_model_compare(const ModelCompareOptions& opt) {
  MOE_CHECK(opt.mode == "isolated" || opt.mode == "free",
            "bisect: --mode '" << opt.mode << "', expected isolated or free");
  MOE_CHECK(!opt.tokens.empty(), "bisect: no tokens");
  MOE_CHECK(opt.prefill >= 1 && opt.chunk >= 1,
            "bisect: --prefill " << opt.prefill << " --chunk " << opt.chunk << ", expected both >= 1");
  MOE_CHECK(opt.dump.empty() || opt.mode == "free",
            "bisect: --dump writes the GPU's own forward: it needs --mode free (isolated feeds the truth's inputs)");
  MOE_CHECK(opt.truth_dump.empty() || opt.mode == "free",
            "bisect: --truth-dump writes the truth run free mode measures drift against: it needs --mode free");
  std::unique_ptr<Model> model = Model::load(opt.model);
  for (int32_t t : opt.tokens)
    MOE_CHECK(t >= 0 && t < model->config().vocab,
              "bisect: token " << t << " is outside the vocabulary [0, " << model->config().vocab << ")");
  vk::Context ctx(opt.device);
  if (ctx.info().type == "cpu") poison_fresh_memory();  // uninitialised shared memory shows (driver.h)
  const bool bundled = opt.kernels.empty() || opt.kernels == "bundled";
  Manifest m =
      opt.mutant.empty() || !bundled ? load_kernels(opt.kernels, opt.kernels_root) : load_bundled_manifest(true);
  std::string mutant;
  if (!opt.mutant.empty()) mutant = plant_mutant(m, opt.mutant);
  ModelCompareResult res;
  res.model = opt.model, res.kernels = opt.kernels.empty() ? "bundled" : opt.kernels;
  res.mutant = mutant;
  res.device = ctx.info().name, res.mode = opt.mode, res.tokens = opt.tokens;

  const bool tty = isatty(2);
  GpuBackend gpu(ctx, m, opt.mode == "isolated" ? Feed::Truth : Feed::Gpu, opt.subgroup, opt.timeout_ms);
  const int64_t layers = model->config().layers, ntok = int64_t(opt.tokens.size());
  gpu.on_record = [&](const OpRecord& r, const OpCase& c) {
    const CaseResult::Status st = r.covered ? r.result.status() : CaseResult::Status::Skip;
    if (st == CaseResult::Status::Pass) ++res.passed;
    if (st == CaseResult::Status::Fail) ++res.failed;
    if (!r.covered) ++res.uncovered;
    if (st == CaseResult::Status::Fail && res.first_failure < 0) {
      res.first_failure = int64_t(gpu.records().size()) - 1;
      if (!opt.case_out.empty()) {
        CaseFile f;
        f.c = c, f.manifest = opt.kernels, f.plan = r.result.kernel;
        f.origin = {{"model", opt.model},         {"where", r.where},
                    {"layer", std::to_string(r.layer)}, {"token", std::to_string(r.token)},
                    {"tokens", std::to_string(r.tokens)}, {"mode", opt.mode}};
        save_case_file(opt.case_out, f);
        res.case_file = opt.case_out;
      }
    }
    // On a terminal every op updates one line; in a log, one line per forward call (at lm_head).
    if (opt.progress && (tty || r.where == "lm_head")) {
      const int64_t shown = r.layer >= 0 ? r.layer + 1 : (r.where == "model.embed_tokens" ? 0 : layers);
      std::fprintf(stderr, "%stoken %lld/%lld, layer %lld/%lld, %lld ops compared, %lld failed, %lld uncovered%s",
                   tty ? "\r" : "", (long long)(r.token + r.tokens), (long long)ntok, (long long)shown,
                   (long long)layers, (long long)(res.passed + res.failed), (long long)res.failed,
                   (long long)res.uncovered, tty ? "   " : "\n");
    }
  };
  TapStore gpu_taps, ref_taps;
  try {
    drive(*model, gpu, &gpu, opt, opt.mode == "free" ? &gpu_taps : nullptr);
  } catch (const Error& e) {
    // A forward that cannot go on (free mode: NaN from a failed op reaching the router, whose
    // experts then do not exist) after an op has failed: the verdicts so far stand.
    if (res.failed == 0) throw;
    res.stopped = e.what();
  }
  if (opt.progress && tty) std::fprintf(stderr, "\n");
  res.records = gpu.records();
  if (!opt.dump.empty() && res.stopped.empty()) write_dump(opt, opt.dump, "vulkan", gpu_taps);
  if (opt.mode == "free" && res.stopped.empty()) {
    std::unique_ptr<OpBackend> ref = make_cpu_backend("ref64");
    drive(*model, *ref, nullptr, opt, &ref_taps);
    if (!opt.truth_dump.empty()) write_dump(opt, opt.truth_dump, "ref64", ref_taps);
    for (const std::string& name : ref_taps.order()) {
      const TapStore::Tensor* a = gpu_taps.find(name);
      const TapStore::Tensor* b = ref_taps.find(name);
      if (!a || a->v.size() != b->v.size()) continue;
      TapDrift d;
      d.tap = name, d.layer = tap_layer(name);
      for (int64_t r = 0; r < b->rows; ++r) {
        double e2 = 0, t2 = 0, g2 = 0, dot = 0;
        for (int64_t j = 0; j < b->cols; ++j) {
          const double g = a->v[size_t(r * b->cols + j)], t = b->v[size_t(r * b->cols + j)];
          e2 += (g - t) * (g - t), t2 += t * t, g2 += g * g, dot += g * t;
        }
        d.rel.push_back(t2 > 0 ? std::sqrt(e2 / t2) : std::sqrt(e2));
        d.cosine.push_back(t2 > 0 && g2 > 0 ? dot / std::sqrt(t2 * g2) : (e2 == 0 ? 1.0 : 0.0));
      }
      res.drift.push_back(std::move(d));
    }
  }
  return res;
}

void write_model_console(std::ostream& os, const ModelCompareResult& r) {
  os << "model " << r.model << ", kernels " << r.kernels << ", device " << r.device << ", mode " << r.mode << ", "
     << r.tokens.size() << " tokens\n";
  if (!r.mutant.empty()) os << "mutant " << r.mutant << "\n";
  if (!r.stopped.empty()) os << "the forward stopped after the first failure: " << r.stopped << "\n";
  // Per op: passed / failed / uncovered, and the worst budget used.
  struct Agg {
    int64_t pass = 0, fail = 0, unc = 0;
    double worst = 0;
    std::set<std::string> notes;
  };
  std::map<std::string, Agg> by;
  std::vector<std::string> order;
  for (const OpRecord& rec : r.records) {
    if (!by.count(rec.op)) order.push_back(rec.op);
    Agg& a = by[rec.op];
    if (!rec.covered) {
      ++a.unc;
      a.notes.insert(rec.note);
      continue;
    }
    (rec.result.status() == CaseResult::Status::Fail ? a.fail : a.pass) += 1;
    for (const Verdict& v : rec.result.outputs) a.worst = std::max(a.worst, v.budget_used);
  }
  for (const std::string& op : order) {
    const Agg& a = by[op];
    char line[256];
    std::snprintf(line, sizeof line, "  %-14s %6lld passed %6lld failed %6lld uncovered   worst %.3g%% of budget\n",
                  op.c_str(), (long long)a.pass, (long long)a.fail, (long long)a.unc, 100 * a.worst);
    os << line;
    for (const std::string& n : a.notes) os << "      uncovered: " << n << '\n';
  }
  if (r.first_failure >= 0) {
    const OpRecord& f = r.records[size_t(r.first_failure)];
    os << "\nFIRST FAILURE: token " << f.token << (f.tokens > 1 ? " (+" + std::to_string(f.tokens - 1) + ")" : "")
       << ", layer " << f.layer << ", op " << f.op << " at " << f.where << " (kernel " << f.result.kernel << ")\n";
    for (const Verdict& v : f.result.outputs)
      if (!v.pass) os << "    " << v.output << ": " << v.reason << '\n';
    if (!f.result.error.empty()) os << "    error: " << f.result.error << '\n';
    if (!r.case_file.empty()) {
      os << "    case file: " << r.case_file << '\n';
      os << "    replay:    moeoracle compare --case " << r.case_file;
      if (r.kernels != "bundled") os << " --kernels " << r.kernels;
      os << '\n';
    }
  }
  if (!r.drift.empty()) {
    os << "\ndrift against the truth run (L2 relative error, worst token):\n";
    for (const TapDrift& d : r.drift) {
      const bool show = d.tap == "logits" || d.tap == "model.norm.out" ||
                        (d.tap.size() > 4 && d.tap.compare(d.tap.size() - 4, 4, ".out") == 0 &&
                         std::count(d.tap.begin(), d.tap.end(), '.') == 3);
      if (!show) continue;
      double worst = 0;
      for (double e : d.rel) worst = std::max(worst, e);
      char line[256];
      std::snprintf(line, sizeof line, "  %-28s %.3g\n", d.tap.c_str(), worst);
      os << line;
    }
  }
  os << r.passed << " ops passed, " << r.failed << " failed, " << r.uncovered << " uncovered\n";
}

}  // namespace moe::compare
