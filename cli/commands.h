// The subcommands of `moeoracle`. Each file of cli/ registers its own: its options, their help, and
// what runs when it was given; main.cpp only builds the app, parses and dispatches.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "oracle/forward.h"

namespace moe::cli {

// A registered subcommand and what runs when it was given (returns the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_selfcheck(CLI::App& app);  // selfcheck.cpp
Command add_ops(CLI::App& app);        // selfcheck.cpp
Command add_run(CLI::App& app);        // run.cpp
Command add_inspect(CLI::App& app);    // inspect.cpp
Command add_diff(CLI::App& app);       // inspect.cpp
Command add_drift(CLI::App& app);      // drift.cpp
Command add_judge(CLI::App& app);      // judge.cpp
Command add_diverge(CLI::App& app);    // diverge.cpp
Command add_kl_base(CLI::App& app);    // kl_base.cpp
Command add_devices(CLI::App& app);    // devices.cpp
Command add_compare(CLI::App& app);    // compare.cpp
Command add_mutate(CLI::App& app);     // compare.cpp
Command add_merge(CLI::App& app);      // compare.cpp
Command add_bisect(CLI::App& app);     // bisect.cpp
Command add_calibrate(CLI::App& app);  // compare.cpp
Command add_fixture(CLI::App& app);    // fixture.cpp

// --bounds and --precision, the two settings of every command that builds cases (compare,
// mutate, bisect); apply_bounds sets the bound mode process-wide (compare/cases/bound_mode.h).
struct BoundSettings {
  std::string bounds = "probabilistic", precision = "measured";
};
void add_bound_options(CLI::App* sub, BoundSettings& s);
void apply_bounds(const BoundSettings& s);

// --model (required), --tokens and --tokens-file: the inputs of every command that runs a model
// (run, bisect; oracle/tokens.h reads the two token options).
void add_model_options(CLI::App* sub, std::string& model, std::string& tokens, std::string& tokens_file);

// --experts-per-token and --qk-norm-eps: how the engine being matched runs the model (judge,
// diverge); forward_options() turns them into the forward's options.
struct ForwardSettings {
  int64_t experts_per_token = 0;
  std::string qk_norm_eps = "hf";
};
void add_forward_options(CLI::App* sub, ForwardSettings& s);
ForwardOptions forward_options(const ForwardSettings& s);

}  // namespace moe::cli
