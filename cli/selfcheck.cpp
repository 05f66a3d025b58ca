// `moeoracle selfcheck` (every op's three tiers against the truth) and `moeoracle ops`.
#include <cstdio>
#include <memory>
#include <set>
#include <sstream>

#include "commands.h"
#include "core/check.h"
#include "core/simd.h"
#include "core/strings.h"
#include "op_registry.h"

namespace moe::cli {
namespace {

struct SelfcheckOptions {
  uint64_t seed = 1;
  std::string ops;          // comma-separated stems; empty = all
  bool remainders = false;  // also the remainder shapes (the tests always run them)
};

// Each op's three-way check, one table row per case. 0 all pass, 1 a tier is outside its bound.
int run_selfcheck(const SelfcheckOptions& opt) {
  const std::vector<std::string> listed = split_commas(opt.ops);
  const std::set<std::string> wanted(listed.begin(), listed.end());
  std::set<std::string> known;
  for (const OpInfo& op : op_registry()) known.insert(op.stem);
  for (const std::string& w : wanted)
    MOE_CHECK(known.count(w), "selfcheck: unknown op '" << w << "' (see `moeoracle ops`)");

  std::printf("Three-way agreement: f32 tier (engine order) and fast tier against the f64 truth.\n");
  std::printf("'budget' is the worst |error| / bound over all elements (bounds from error analysis, <= 100%% passes).\n");
  std::printf("seed %llu; fast tier SIMD target %s\n\n", (unsigned long long)opt.seed, simd_target().c_str());
  std::printf("%-17s %-28s %10s %10s %10s %10s %8s  %s\n", "op", "shape", "ref32 bud", "fast bud", "truth ms",
              "fast ms", "speedup", "verdict");
  int cases = 0, failed = 0;
  std::vector<std::string> evidence;
  for (const OpInfo& op : op_registry()) {
    if (!wanted.empty() && !wanted.count(op.stem)) continue;
    const auto results = op.check(opt.seed, opt.remainders ? CheckScope::All : CheckScope::Real);
    for (const CheckResult& r : results) {
      ++cases;
      const bool ok = r.pass();
      failed += !ok;
      const double speedup = r.fast.seconds > 0 ? r.truth_seconds / r.fast.seconds : 0.0;
      std::printf("%-17s %-28.28s %9.1f%% %9.1f%% %10.3f %10.3f %7.1fx  %s\n", r.op.c_str(), r.shape.c_str(),
                  100 * r.ref32.worst_ratio, 100 * r.fast.worst_ratio, 1e3 * r.truth_seconds, 1e3 * r.fast.seconds,
                  speedup, ok ? "ok" : "FAIL");
      if (!r.ref32.pass()) evidence.push_back(describe(r, r.ref32));
      if (!r.fast.pass()) evidence.push_back(describe(r, r.fast));
    }
  }
  for (const std::string& e : evidence) std::printf("FAIL %s\n", e.c_str());
  std::printf("\n%d passed, %d failed\n", cases - failed, failed);
  return failed ? 1 : 0;
}

}  // namespace

Command add_selfcheck(CLI::App& app) {
  auto sc = std::make_shared<SelfcheckOptions>();
  auto* c = app.add_subcommand("selfcheck", "Check every CPU op's f32 and fast tiers against the f64 truth");
  c->add_option("--seed", sc->seed, "Random seed of the inputs")->capture_default_str();
  c->add_option("--ops", sc->ops, "Comma-separated ops to check (default: all)");
  c->add_flag("--remainders", sc->remainders, "Also check the remainder shapes (1, 31, 33, 67, 4099, ...)");
  return {c, [sc] { return run_selfcheck(*sc); }};
}

Command add_ops(CLI::App& app) {
  return {app.add_subcommand("ops", "List the ops of the op list"), [] {
            for (const OpInfo& op : op_registry()) std::printf("%-18s %s\n", op.stem, op.summary);
            return 0;
          }};
}

}  // namespace moe::cli
