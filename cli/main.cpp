// moeoracle: the CPU ground truth and differential oracle for streaming-MoE engines.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "commands.h"
#include "compare/run/isolate.h"
#include "core/check.h"
#include "core/simd.h"

int main(int argc, char** argv) {
  try {
    // MOE_SIMD=NAME runs the fast tier on another SIMD target than the best (to compare paths).
    if (const char* t = std::getenv("MOE_SIMD"); t && *t) moe::simd_pin(t);
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moeoracle: error: MOE_SIMD: %s\n", e.what());
    return 2;
  }
  // An isolated compare worker (compare/run/isolate.h): compare's protocol, not a user command.
  if (argc >= 2 && std::string(argv[1]) == moe::compare::kWorkerCommand) return moe::compare::worker_main(argc, argv);

  CLI::App app{"moeoracle: CPU ground truth and differential oracle for streaming-MoE inference engines"};
  // The fast tier's SIMD target is picked at run time (Highway): part of what a figure means.
  app.set_version_flag("--version", [] {
    std::string all;
    for (const std::string& t : moe::simd_targets()) all += (all.empty() ? "" : " ") + t;
    return std::string("moeoracle ") + MOE_VERSION + "\nfast tier SIMD target: " + moe::simd_target() +
           " (this CPU and binary offer: " + all + "; MOE_SIMD=NAME pins one)";
  });
  app.require_subcommand(1);
  namespace cli = moe::cli;
  const std::vector<cli::Command> commands = {
      cli::add_selfcheck(app), cli::add_ops(app),     cli::add_run(app),       cli::add_inspect(app),
      cli::add_diff(app),      cli::add_drift(app),   cli::add_judge(app),     cli::add_diverge(app),
      cli::add_kl_base(app),   cli::add_devices(app), cli::add_compare(app),   cli::add_merge(app),
      cli::add_mutate(app),    cli::add_bisect(app),  cli::add_calibrate(app), cli::add_fixture(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (const cli::Command& c : commands)
      if (*c.app) return c.run();
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moeoracle: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
