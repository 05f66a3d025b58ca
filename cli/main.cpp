// moeoracle: the CPU ground truth and differential oracle for streaming-MoE engines.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/check.h"
#include "op_registry.h"
#include "selfcheck.h"

int main(int argc, char** argv) {
  CLI::App app{"moeoracle: CPU ground truth and differential oracle for streaming-MoE inference engines"};
  app.set_version_flag("--version", std::string(MOE_VERSION));
  app.require_subcommand(1);

  moe::SelfcheckOptions sc;
  auto* selfcheck = app.add_subcommand("selfcheck", "Check every CPU op's f32 and fast tiers against the f64 truth");
  selfcheck->add_option("--seed", sc.seed, "Random seed of the inputs")->capture_default_str();
  selfcheck->add_option("--ops", sc.ops, "Comma-separated ops to check (default: all)");
  selfcheck->add_flag("--remainders", sc.remainders, "Also check the remainder shapes (1, 31, 33, 67, 4099, ...)");

  auto* ops = app.add_subcommand("ops", "List the ops of the op list");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (*selfcheck) return moe::run_selfcheck(sc);
    if (*ops) {
      for (const moe::OpInfo& op : moe::op_registry()) std::printf("%-18s %s\n", op.stem, op.summary);
      return 0;
    }
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moeoracle: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
