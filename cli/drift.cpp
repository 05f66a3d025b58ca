// `drift`: how far a candidate's next-token distributions are from the truth's (oracle/drift.h),
// from two dumps of the same tokens' logits, in the figures llama-perplexity --kl-divergence prints.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "commands.h"
#include "core/check.h"
#include "oracle/drift.h"
#include "oracle/dump_diff.h"
#include "oracle/safetensors.h"
#include "oracle/tap_map.h"
#include "oracle/tokens.h"

namespace moe::cli {
namespace {

struct DriftOptions {
  std::string base, test;
  std::string tap = "logits", test_tap;  // test_tap "": the same name
  std::string map;                       // the candidate's names -> taps (oracle/tap_map.h)
  double max_kld = -1;                   // exit 1 when the mean KLD is above it (< 0: never)
  int64_t windows = 0;                   // > 0: each layer's output drift against position, in this many windows
};

// --layers W: every model.layers.N.out both dumps hold, its drift against position (oracle/drift.h).
void print_layer_drift(const SafetensorsFile& a, const SafetensorsFile& b, int64_t windows) {
  bool header = false;
  for (const std::string& name : a.names_in_file_order()) {
    if (name.rfind("model.layers.", 0) != 0 || name.size() < 4 || name.compare(name.size() - 4, 4, ".out") != 0 ||
        name.find('.', 13) != name.size() - 4)
      continue;
    const TensorInfo* ta = a.find(name);
    const TensorInfo* tb = b.find(name);
    if (!tb || ta->shape != tb->shape || ta->shape.size() != 2) continue;
    const std::vector<double> va = tensor_values(*ta), vb = tensor_values(*tb);
    const std::vector<float> fa(va.begin(), va.end()), fb(vb.begin(), vb.end());
    const PositionDrift d = position_drift(fa, fb, ta->shape[0], ta->shape[1], windows);
    if (!header) {
      std::printf("\nlayer output drift against position (L2 relative error, mean / max per window of positions):\n");
      std::printf("%-28s", "tap \\ positions from");
      for (int64_t s : d.window_start) std::printf(" %21lld", (long long)s);
      std::printf("\n");
      header = true;
    }
    std::printf("%-28s", name.c_str());
    for (size_t w = 0; w < d.window_mean.size(); ++w)
      std::printf("   %9.3g / %-9.3g", d.window_mean[w], d.window_max[w]);
    std::printf("\n");
  }
  if (!header) std::printf("\nlayer drift: neither dump pair holds model.layers.N.out taps of the same shape\n");
}

// A [rows, vocab] logits tap as f32 (dump dtypes widened or narrowed exactly as tensor_values does).
std::vector<float> logits_of(const SafetensorsFile& f, const std::string& tap, int64_t& rows, int64_t& vocab) {
  const TensorInfo* t = f.find(tap);
  MOE_CHECK(t, "drift: " << f.path() << " has no tensor '" << tap << "'");
  MOE_CHECK(t->shape.size() == 2 && t->shape[1] > 0,
            "drift: " << f.path() << ": '" << tap << "' is " << t->shape_string() << ", expected [tokens, vocab]");
  rows = t->shape[0], vocab = t->shape[1];
  const std::vector<double> v = tensor_values(*t);
  return {v.begin(), v.end()};
}

// The candidate's logits through a `diff --map` file: its tensors that map to `tap`, whole or one
// token's row each (an engine that dumps per decode step); every row of [rows, vocab] must come.
std::vector<float> mapped_logits(const SafetensorsFile& f, const TapMap& map, const std::string& tap, int64_t rows,
                                 int64_t vocab) {
  std::vector<float> out(size_t(rows * vocab));
  std::vector<char> seen(size_t(rows), 0);
  for (const std::string& name : f.names_in_file_order()) {
    const std::optional<TapTarget> t = map.map(name);
    if (!t || t->tap != tap) continue;
    const TensorInfo& info = *f.find(name);
    const std::vector<double> v = tensor_values(info);
    const int64_t first = t->token >= 0 ? t->token : 0, n = t->token >= 0 ? 1 : rows;
    MOE_CHECK(first + n <= rows && int64_t(v.size()) == n * vocab,
              "drift: " << f.path() << ": '" << name << "' (" << info.shape_string() << ") maps to " << tap
                        << (t->token >= 0 ? " row " + std::to_string(t->token) : std::string()) << ", expected "
                        << n << " x " << vocab << " values within " << rows << " rows");
    std::copy(v.begin(), v.end(), out.begin() + first * vocab);
    std::fill(seen.begin() + first, seen.begin() + first + n, 1);
  }
  for (int64_t r = 0; r < rows; ++r)
    MOE_CHECK(seen[size_t(r)], "drift: " << f.path() << ": no tensor maps to row " << r << " of " << tap);
  return out;
}

// The tokens the rows are: the dump's "tokens" tap, else its "tokens" metadata; empty: unknown.
std::vector<int32_t> tokens_of(const SafetensorsFile& f) {
  if (const TensorInfo* t = f.find("tokens")) {
    const std::vector<double> v = tensor_values(*t);
    return {v.begin(), v.end()};
  }
  if (auto it = f.metadata().find("tokens"); it != f.metadata().end() && !it->second.empty())
    return parse_tokens(it->second, f.path() + " metadata 'tokens'");
  return {};
}

int run_drift(const DriftOptions& opt) {
  const SafetensorsFile a(opt.base), b(opt.test);
  int64_t rows = 0, vocab = 0, rows_b = 0, vocab_b = 0;
  const std::vector<float> lb = logits_of(a, opt.tap, rows, vocab);
  std::vector<float> lt;
  if (opt.map.empty()) {
    lt = logits_of(b, opt.test_tap.empty() ? opt.tap : opt.test_tap, rows_b, vocab_b);
  } else {
    lt = mapped_logits(b, TapMap::load(opt.map), opt.tap, rows, vocab);
    rows_b = rows, vocab_b = vocab;
  }
  MOE_CHECK(rows == rows_b && vocab == vocab_b, "drift: " << opt.base << " has " << rows << " x " << vocab << " logits, "
                                                          << opt.test << " " << rows_b << " x " << vocab_b);
  const std::vector<int32_t> tokens = tokens_of(a);
  const DriftStats s = drift_stats(lb, lt, rows, vocab, tokens);
  std::printf("drift of %s (test) from %s (base): %lld positions, vocabulary %lld\n", opt.test.c_str(),
              opt.base.c_str(), (long long)rows, (long long)vocab);
  std::printf("Mean    KLD: %12.6g +- %10.4g\n", s.kld.mean, s.kld.std_error);
  std::printf("Maximum KLD: %12.6g\n99.9%%   KLD: %12.6g\n99.0%%   KLD: %12.6g\n90.0%%   KLD: %12.6g\n", s.kld_max,
              s.kld_p999, s.kld_p99, s.kld_p90);
  std::printf("Median  KLD: %12.6g\nMinimum KLD: %12.6g\n", s.kld_median, s.kld_min);
  if (s.nonfinite) std::printf("Rows with a non-finite KLD (NaN or +inf test logits): %lld\n", (long long)s.nonfinite);
  std::printf("Same top p: %8.4f +- %.4f %%", 100 * s.same_top.mean, 100 * s.same_top.std_error);
  if (s.first_top_change >= 0) std::printf("   (first change at position %lld)", (long long)s.first_top_change);
  std::printf("\n");
  if (s.scored) {
    std::printf("Mean     dp: %12.6g +- %10.4g %%\nRMS      dp: %12.6g %%\nMaximum  dp: %12.6g %%\nMinimum  dp: %12.6g %%\n",
                100 * s.dp.mean, 100 * s.dp.std_error, 100 * s.dp_rms, 100 * s.dp_max, 100 * s.dp_min);
    std::printf("Mean ln(PPL(test)/PPL(base)): %12.6g +- %10.4g   (%lld positions with a next token)\n",
                s.ln_ppl_ratio.mean, s.ln_ppl_ratio.std_error, (long long)s.scored);
  } else {
    std::printf("dp and PPL: not computed (%s has no tokens tap or metadata)\n", opt.base.c_str());
  }
  if (opt.windows > 0) print_layer_drift(a, b, opt.windows);
  const bool over = opt.max_kld >= 0 && (s.nonfinite > 0 || s.kld.mean > opt.max_kld);
  if (opt.max_kld >= 0) std::printf("%s: mean KLD %s %g\n", over ? "FAIL" : "ok", over ? "above" : "within", opt.max_kld);
  return over ? 1 : 0;
}

}  // namespace

Command add_drift(CLI::App& app) {
  auto o = std::make_shared<DriftOptions>();
  auto* d = app.add_subcommand(
      "drift", "KL divergence, same-top and dp of a candidate's next-token distributions from the truth's (two dumps)");
  d->add_option("base", o->base, "The truth's dump (run --dump ... --taps logits,tokens)")->required();
  d->add_option("test", o->test, "The candidate's dump of the same tokens")->required();
  d->add_option("--tap", o->tap, "The logits tensor [tokens, vocab]")->capture_default_str();
  d->add_option("--test-tap", o->test_tap, "The candidate's logits tensor, when named otherwise");
  d->add_option("--map", o->map,
                "The candidate's names as taps (diff --map's file): its tensors mapped to --tap, whole or per token");
  d->add_option("--max-kld", o->max_kld, "Exit 1 when the mean KLD (nats) is above this, or a row is not finite");
  d->add_option("--layers", o->windows,
                "Also each layer's output drift against position (model.layers.N.out in both dumps), in W windows");
  return {d, [o] { return run_drift(*o); }};
}

}  // namespace moe::cli
