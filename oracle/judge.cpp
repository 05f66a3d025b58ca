#include "oracle/judge.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/bf16.h"
#include "core/check.h"
#include "core/half.h"
#include "oracle/backend.h"
#include "oracle/dump_diff.h"
#include "oracle/state.h"
#include "oracle/tokens.h"

namespace moe {

Storage parse_storage(const std::string& s) {
  if (s == "f32") return Storage::F32;
  if (s == "f16") return Storage::F16;
  if (s == "bf16") return Storage::BF16;
  MOE_FAIL("judge: storage '" << s << "': expected f32, f16 or bf16");
}

const char* storage_name(Storage s) { return s == Storage::F32 ? "f32" : s == Storage::F16 ? "f16" : "bf16"; }

double storage_unit_roundoff(Storage s) {
  return s == Storage::F32 ? 0x1.0p-24 : s == Storage::F16 ? 0x1.0p-11 : 0x1.0p-8;
}

float round_to_storage(float v, Storage s) {
  if (s == Storage::BF16) return bf16_to_f32(f32_to_bf16_rne(v));
  if (s == Storage::F16) return float(f16_to_double(f16_from_double(double(v))));
  return v;
}

EngineTaps engine_taps(const SafetensorsFile& f, const TapMap* map, int64_t tokens) {
  MOE_CHECK(tokens > 0, "judge: no tokens");
  EngineTaps out;
  out.tokens = tokens;
  for (const std::string& name : f.names_in_file_order()) {
    if (name == "tokens") continue;
    TapTarget target{name, -1};
    if (map) {
      const std::optional<TapTarget> t = map->map(name);
      if (!t) {
        out.unmapped.push_back(name);
        continue;
      }
      target = *t;
    }
    const TensorInfo& info = *f.find(name);
    const std::vector<double> v = tensor_values(info);
    const int64_t n = int64_t(v.size());
    const int64_t rows = target.token >= 0 ? 1 : tokens;
    MOE_CHECK(n > 0 && n % rows == 0 && target.token < tokens,
              "judge: " << f.path() << ": tensor '" << name << "' " << info.shape_string() << " maps to " << target.tap
                        << (target.token >= 0 ? " row " + std::to_string(target.token) : std::string()) << ": expected "
                        << (target.token >= 0 ? "one row" : std::to_string(tokens) + " rows") << " of the " << tokens
                        << " tokens, found " << n << " values");
    const int64_t cols = n / rows;
    EngineTap& tap = out.taps[target.tap];
    if (tap.cols == 0) {
      tap.cols = cols;
      tap.values.assign(size_t(tokens * cols), 0.0f);
      tap.present.assign(size_t(tokens), 0);
    }
    MOE_CHECK(tap.cols == cols, "judge: " << f.path() << ": tensor '" << name << "' gives " << target.tap << " rows of "
                                          << cols << " values; '" << tap.sources.front() << "' gave " << tap.cols);
    const int64_t first = target.token >= 0 ? target.token : 0;
    for (int64_t i = 0; i < n; ++i) tap.values[size_t(first * cols + i)] = float(v[size_t(i)]);
    std::fill(tap.present.begin() + first, tap.present.begin() + first + rows, 1);
    tap.sources.push_back(name);
  }
  return out;
}

namespace {

// Records what the forward computed at each tap the engine has, then hands the forward the
// engine's values where it has them.
class ReplaySink : public TapSink {
 public:
  explicit ReplaySink(const EngineTaps& e) : e_(e) {}
  bool wants(const std::string& name) const override { return e_.taps.count(name) > 0; }
  void put(const std::string& name, std::span<const float> data, int64_t rows, int64_t cols) override {
    computed[name].assign(data.begin(), data.end());
    note(name, rows, cols);
  }
  void put_i32(const std::string& name, std::span<const int32_t> data, int64_t rows, int64_t cols) override {
    computed_i32[name].assign(data.begin(), data.end());
    note(name, rows, cols);
  }
  void substitute(const std::string& name, std::span<float> data, int64_t rows, int64_t cols) override {
    const EngineTap& t = e_.taps.at(name);
    for (int64_t r = 0; r < rows; ++r)
      if (t.present[size_t(r)]) std::copy_n(t.values.begin() + r * cols, cols, data.begin() + r * cols);
    fed.insert(name);
  }
  void substitute_i32(const std::string& name, std::span<int32_t> data, int64_t rows, int64_t cols) override {
    const EngineTap& t = e_.taps.at(name);
    for (int64_t r = 0; r < rows; ++r) {
      if (!t.present[size_t(r)]) continue;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = t.values[size_t(r * cols + c)];
        MOE_CHECK(v == std::floor(v) && v >= 0 && v < float(experts_),
                  "judge: the engine's " << name << " (" << t.sources.front() << ") token " << r << " slot " << c
                                         << " is " << v << ", expected an expert index below " << experts_);
        data[size_t(r * cols + c)] = int32_t(v);
      }
    }
    fed.insert(name);
  }
  void set_experts(int64_t e) { experts_ = e; }

  std::map<std::string, std::vector<float>> computed;
  std::map<std::string, std::vector<int32_t>> computed_i32;
  std::vector<std::string> order;
  std::set<std::string> fed;

 private:
  // put() comes first at every tap: the shape check lives here, before any substitution.
  void note(const std::string& name, int64_t rows, int64_t cols) {
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
    const EngineTap& t = e_.taps.at(name);
    MOE_CHECK(rows == e_.tokens && t.cols == cols, "judge: the engine's "
                                                       << name << " (" << t.sources.front() << ") has rows of "
                                                       << t.cols << " values; this model's forward has " << cols);
  }
  const EngineTaps& e_;
  int64_t experts_ = 1 << 24;
};

int64_t layer_of(const std::string& tap) {
  const std::string p = "model.layers.";
  if (tap.rfind(p, 0) != 0) return -1;
  return std::atoll(tap.c_str() + p.size());
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// max |a - b| over a row; infinite where one side is not finite and the two are not the same
// non-finite value.
double row_err(std::span<const float> a, std::span<const float> b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      if (!same_nonfinite(a[i], b[i])) return INFINITY;
      continue;
    }
    e = std::max(e, std::fabs(double(a[i]) - double(b[i])));
  }
  return e;
}

double row_max(std::span<const float> a) {
  double m = 0;
  for (float v : a)
    if (std::isfinite(v)) m = std::max(m, double(std::fabs(v)));
  return m;
}

struct Replays {
  const EngineTaps& engine;
  ReplaySink& truth;
  std::vector<ReplaySink*> honest;  // ref32 and fast: two honest f32 orders
  const Model& model;
  const JudgeOptions& opt;
  std::map<std::string, double> pooled;  // per tap kind (the name without its layer): see pooled_rel
};

// The tap's kind: its name with the layer number dropped ("model.layers.7.mlp.gate.out" ->
// "model.layers.mlp.gate.out"), so a kind pools the honest error of every layer.
std::string tap_kind(const std::string& tap) {
  const std::string p = "model.layers.";
  if (tap.rfind(p, 0) != 0) return tap;
  const size_t dot = tap.find('.', p.size());
  return dot == std::string::npos ? tap : p + tap.substr(dot + 1);
}

void finish(ModuleVerdict& m, int64_t t, double err, double bound) {
  m.err[size_t(t)] = err, m.bound[size_t(t)] = bound;
  ++m.judged;
  const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
  m.worst_ratio = std::max(m.worst_ratio, ratio);
  if (!(err <= bound)) {
    ++m.failed;
    if (m.first_failed_token < 0) m.first_failed_token = t;
  }
}

// Routing weights in expert order on every side; `comparable[t]` false where the engine chose
// other experts than the truth (judged in mlp.experts.idx), and the honest row NaN where the
// honest run did.
int64_t order_weights(const Replays& r, const std::string& name, int64_t cols, std::vector<float>& truth,
                      std::vector<std::vector<float>>& honest, std::vector<float>& eng, std::vector<char>& comparable,
                      ModuleVerdict& m) {
  const std::string idx = name.substr(0, name.size() - std::string("weight").size()) + "idx";
  const auto ti = r.truth.computed_i32.find(idx);
  const auto ei = r.engine.taps.find(idx);
  if (ti == r.truth.computed_i32.end() || ei == r.engine.taps.end()) {
    m.note = "weights judged in slot order (the engine dumped no " + idx + ")";
    return 0;
  }
  const std::vector<int32_t> eidx(ei->second.values.begin(), ei->second.values.end());
  truth = in_expert_order(truth, ti->second, cols), eng = in_expert_order(eng, eidx, cols);
  for (size_t h = 0; h < honest.size(); ++h)
    honest[h] = in_expert_order(honest[h], r.honest[h]->computed_i32.at(idx), cols);
  int64_t skipped = 0;
  for (int64_t t = 0; t < r.engine.tokens; ++t) {
    auto sorted = [&](const std::vector<int32_t>& v) {
      std::vector<int32_t> s(v.begin() + t * cols, v.begin() + (t + 1) * cols);
      std::sort(s.begin(), s.end());
      return s;
    };
    const std::vector<int32_t> a = sorted(ti->second);
    if (a != sorted(eidx)) comparable[size_t(t)] = 0, ++skipped;
    for (size_t h = 0; h < honest.size(); ++h)
      if (a != sorted(r.honest[h]->computed_i32.at(idx)))
        std::fill(honest[h].begin() + t * cols, honest[h].begin() + (t + 1) * cols, NAN);
  }
  return skipped;
}

// The honest error of token t of a tap: the larger of the two honest orders' max |honest - truth|
// over the row (0 where an honest run chose other experts: a near-tie).
double honest_err(const std::vector<std::vector<float>>& honest, const std::vector<float>& truth, int64_t t,
                  int64_t cols) {
  const std::span<const float> y(truth.data() + t * cols, size_t(cols));
  double e = 0;
  for (const std::vector<float>& h : honest) {
    const double d = row_err(std::span<const float>(h.data() + t * cols, size_t(cols)), y);
    if (std::isfinite(d)) e = std::max(e, d);
  }
  return e;
}

// Per tap kind, the largest honest error relative to its row's magnitude over every layer and
// token (at least 2^-24): one token's honest error is one sample, and a short row (a scalar gate,
// a dot product of cancelling terms) may round exactly in both honest orders by chance.
std::map<std::string, double> pooled_rel(const Replays& r) {
  std::map<std::string, double> pooled;
  for (const std::string& name : r.truth.order) {
    const auto it = r.truth.computed.find(name);
    if (it == r.truth.computed.end()) continue;
    const int64_t cols = r.engine.taps.at(name).cols;
    std::vector<std::vector<float>> honest;
    for (ReplaySink* h : r.honest) honest.push_back(h->computed.at(name));
    double& p = pooled.try_emplace(tap_kind(name), 0x1.0p-24).first->second;
    if (ends_with(name, ".mlp.experts.weight")) continue;  // slot order: pooled only in expert order
    for (int64_t t = 0; t < r.engine.tokens; ++t) {
      const double ymax = row_max(std::span<const float>(it->second.data() + t * cols, size_t(cols)));
      if (ymax > 0) p = std::max(p, honest_err(honest, it->second, t, cols) / ymax);
    }
  }
  return pooled;
}

// A float tap, row by row: truth and honest from the replays, the engine's from its dump.
void judge_rows(const Replays& r, const std::string& name, ModuleVerdict& m) {
  const EngineTap& e = r.engine.taps.at(name);
  const int64_t cols = e.cols, T = r.engine.tokens;
  std::vector<float> truth = r.truth.computed.at(name), eng = e.values;
  std::vector<std::vector<float>> honest;
  for (ReplaySink* h : r.honest) honest.push_back(h->computed.at(name));
  std::vector<char> comparable(size_t(T), 1);
  const int64_t skipped =
      ends_with(name, ".mlp.experts.weight") ? order_weights(r, name, cols, truth, honest, eng, comparable, m) : 0;
  double pooled = r.pooled.at(tap_kind(name));
  std::vector<double> eh(size_t(T), 0), ymax(size_t(T), 0);
  for (int64_t t = 0; t < T; ++t) {
    ymax[size_t(t)] = row_max(std::span<const float>(truth.data() + t * cols, size_t(cols)));
    eh[size_t(t)] = honest_err(honest, truth, t, cols);
    if (ymax[size_t(t)] > 0) pooled = std::max(pooled, eh[size_t(t)] / ymax[size_t(t)]);
  }
  // Element by element: the order allowance of the row plus one unit in the last place of the
  // storage at that element (the engine rounds its own value, which may sit across a rounding
  // boundary from the truth's). The token's figure is its element of largest error / bound.
  const double ulp = 2 * storage_unit_roundoff(r.opt.storage);
  // Below the storage's smallest normal the spacing is fixed: f16's 2^-24, bf16's 2^-133, f32's 2^-149.
  const double tiny = r.opt.storage == Storage::F16    ? 0x1.0p-24
                      : r.opt.storage == Storage::BF16 ? 0x1.0p-133
                                                       : 0x1.0p-149;
  for (int64_t t = 0; t < T; ++t) {
    if (!e.present[size_t(t)] || !comparable[size_t(t)]) continue;
    const double order = r.opt.multiple * std::max(eh[size_t(t)], pooled * ymax[size_t(t)]);
    double worst = -1, err = 0, bound = order;
    for (int64_t i = t * cols; i < (t + 1) * cols; ++i) {
      const double y = truth[size_t(i)], v = eng[size_t(i)];
      double d = std::fabs(v - y);
      if (!std::isfinite(v) || !std::isfinite(y)) d = same_nonfinite(v, y) ? 0 : INFINITY;
      const double b = order + std::max(ulp * (std::isfinite(y) ? std::fabs(y) : 0), tiny);
      const double ratio = b > 0 ? d / b : (d > 0 ? INFINITY : 0);
      if (ratio > worst) worst = ratio, err = d, bound = b;
    }
    finish(m, t, err, bound);
  }
  if (skipped)
    m.note = std::to_string(skipped) + " token(s) not judged: the engine chose other experts (see mlp.experts.idx)";
}

// The scores the router ranks by for token t (the logits the truth's router saw: the engine's,
// where it dumped them): the logits, or DeepSeek's sigmoid(logit) + selection bias.
std::vector<double> router_scores(const Replays& r, const std::string& gate, int64_t layer, int64_t t) {
  const std::vector<float>& g = r.truth.computed.at(gate);
  const int64_t E = int64_t(g.size()) / r.engine.tokens;
  const auto ge = r.engine.taps.find(gate);
  const float* row = (ge != r.engine.taps.end() && ge->second.present[size_t(t)]) ? ge->second.values.data() + t * E
                                                                                  : g.data() + t * E;
  std::vector<double> score(static_cast<size_t>(E));
  const bool noaux = r.model.config().router == RouterKind::NoauxTc;
  for (int64_t x = 0; x < E; ++x)
    score[size_t(x)] = noaux ? 1.0 / (1.0 + std::exp(-double(row[x]))) + r.model.layer(layer).mlp.score_bias[size_t(x)]
                             : double(row[x]);
  return score;
}

// Routing: the engine's expert set per token against the truth's on the same router logits; a
// difference passes only where every swapped pair's scores are within the allowance (near-tie).
void judge_idx(const Replays& r, const std::string& name, ModuleVerdict& m) {
  const EngineTap& e = r.engine.taps.at(name);
  const int64_t k = e.cols, T = r.engine.tokens;
  const std::vector<int32_t>& truth = r.truth.computed_i32.at(name);
  const std::string gate = name.substr(0, name.size() - std::string("experts.idx").size()) + "gate.out";
  const bool have_gate = r.truth.computed.count(gate) > 0;
  const double u = storage_unit_roundoff(r.opt.storage);
  int64_t ties = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (!e.present[size_t(t)]) continue;
    const std::set<int32_t> a(truth.begin() + t * k, truth.begin() + (t + 1) * k);
    std::set<int32_t> b;
    for (int64_t s = 0; s < k; ++s) b.insert(int32_t(e.values[size_t(t * k + s)]));
    if (a == b) {
      finish(m, t, 0, 0);
      continue;
    }
    double worst = INFINITY, tol = 0;  // without the router's logits no near-tie can be shown
    if (have_gate) {
      const std::vector<double> score = router_scores(r, gate, m.layer, t);
      double mx = 1;
      for (double s : score) mx = std::max(mx, std::fabs(s));
      tol = r.opt.multiple * u * mx;
      worst = 0;
      for (int32_t x : b)
        if (!a.count(x))
          for (int32_t y : a)
            if (!b.count(y)) worst = std::max(worst, std::fabs(score[size_t(x)] - score[size_t(y)]));
    }
    if (worst <= tol) ++ties;
    finish(m, t, worst, tol);
  }
  if (ties) m.note = std::to_string(ties) + " token(s) with other experts at a near-tie (accepted)";
}

}  // namespace

JudgeReport judge_engine(const Model& model, std::span<const int32_t> tokens, const EngineTaps& engine,
                         const JudgeOptions& opt) {
  const int64_t T = int64_t(tokens.size());
  MOE_CHECK(T == engine.tokens, "judge: " << T << " tokens, the engine's taps hold " << engine.tokens);
  MOE_CHECK(opt.multiple >= 1,
            "judge: multiple " << opt.multiple << " below 1 would fail the honest implementation itself");
  ReplaySink truth(engine), ref32(engine), fast(engine);
  for (auto [sink, tier] : {std::pair{&truth, "ref64"}, {&ref32, "ref32"}, {&fast, "fast"}}) {
    sink->set_experts(model.config().experts);
    const std::unique_ptr<OpBackend> be = make_cpu_backend(tier);
    Forward f(model, *be, opt.forward);
    ModelState state = ModelState::make(model.config(), T);
    f.run(tokens, state, sink);
  }
  JudgeReport rep;
  rep.tokens = T, rep.storage = opt.storage, rep.multiple = opt.multiple, rep.unmapped = engine.unmapped;
  Replays r{engine, truth, {&ref32, &fast}, model, opt, {}};
  r.pooled = pooled_rel(r);
  for (const std::string& name : truth.order) {
    ModuleVerdict m;
    m.tap = name, m.layer = layer_of(name), m.fed = truth.fed.count(name) > 0;
    m.err.assign(size_t(T), -1), m.bound.assign(size_t(T), -1);
    if (truth.computed_i32.count(name))
      judge_idx(r, name, m);
    else
      judge_rows(r, name, m);
    if (m.failed && rep.first_failed < 0) rep.first_failed = int64_t(rep.modules.size());
    rep.modules.push_back(std::move(m));
  }
  for (const auto& [name, tap] : engine.taps)
    if (std::find(truth.order.begin(), truth.order.end(), name) == truth.order.end())
      rep.not_judged.push_back(name + " (from " + tap.sources.front() + "): not a tap of this model's forward");
  return rep;
}

JudgeReport judge_dump(const std::string& model_path, const std::string& dump_path, std::vector<int32_t> tokens,
                       const std::string& map_path, const JudgeOptions& opt) {
  const SafetensorsFile dump(dump_path);
  if (tokens.empty()) {
    if (const TensorInfo* t = dump.find("tokens")) {
      for (double x : tensor_values(*t)) tokens.push_back(int32_t(x));
    } else {
      const auto it = dump.metadata().find("tokens");
      MOE_CHECK(it != dump.metadata().end() && !it->second.empty(),
                "judge: " << dump_path << " names no tokens (no 'tokens' tensor or metadata): give them");
      tokens = parse_tokens(it->second, dump_path + " metadata 'tokens'");
    }
  }
  if (auto it = dump.metadata().find("start_pos"); it != dump.metadata().end())
    MOE_CHECK(it->second == "0", "judge: " << dump_path << " starts at position " << it->second
                                           << "; judge replays from position 0 (dump the whole sequence)");
  const std::unique_ptr<Model> model = Model::load(model_path);
  check_token_range(tokens, model->config().vocab, "judge");
  std::optional<TapMap> map;
  if (!map_path.empty()) map = TapMap::load(map_path);
  const EngineTaps engine = engine_taps(dump, map ? &*map : nullptr, int64_t(tokens.size()));
  MOE_CHECK(!engine.taps.empty(), "judge: " << dump_path << " holds no tensor that is a tap"
                                            << (map ? " under the map " + map_path : std::string()));
  return judge_engine(*model, tokens, engine, opt);
}

std::string judge_report_json(const JudgeReport& rep) {
  const auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("inf"); };
  nlohmann::json j;
  j["tokens"] = rep.tokens, j["storage"] = storage_name(rep.storage), j["multiple"] = rep.multiple;
  j["first_failed"] =
      rep.first_failed >= 0 ? nlohmann::json(rep.modules[size_t(rep.first_failed)].tap) : nlohmann::json();
  j["modules"] = nlohmann::json::array();
  for (const ModuleVerdict& m : rep.modules) {
    nlohmann::json e{{"tap", m.tap},       {"layer", m.layer},
                     {"fed", m.fed},       {"judged", m.judged},
                     {"failed", m.failed}, {"first_failed_token", m.first_failed_token},
                     {"note", m.note},     {"worst_ratio", num(m.worst_ratio)}};
    e["err"] = nlohmann::json::array(), e["bound"] = nlohmann::json::array();
    for (size_t t = 0; t < m.err.size(); ++t) e["err"].push_back(num(m.err[t])), e["bound"].push_back(num(m.bound[t]));
    j["modules"].push_back(e);
  }
  j["not_judged"] = rep.not_judged, j["unmapped"] = rep.unmapped;
  return j.dump(1) + "\n";
}

}  // namespace moe
