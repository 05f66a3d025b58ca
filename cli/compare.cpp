// `moeoracle compare`, `mutate` and `calibrate`: the options of compare/ from the command line.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "compare/cases/bound_mode.h"
#include "compare/mutate/mutate.h"
#include "compare/run/calibrate.h"
#include "compare/run/driver.h"

namespace moe::cli {

void add_bound_options(CLI::App* sub, BoundSettings& s) {
  sub->add_option("--bounds", s.bounds,
                  "Error bounds of sums: probabilistic (lambda = 10, false alarms < 1e-13 per element; assumes round "
                  "to nearest) or worst (any rounding; looser)")
      ->check(CLI::IsMember({"probabilistic", "worst"}))
      ->capture_default_str();
  sub->add_option("--precision", s.precision,
                  "Error budgets of exp/log/sin/cos/inversesqrt/division: measured (on the device, at start: the "
                  "largest error of a dense sweep x 2, at most the Vulkan rule unless the device breaks it) or spec "
                  "(the Vulkan precision rules)")
      ->check(CLI::IsMember({"measured", "spec"}))
      ->capture_default_str();
}

void apply_bounds(const BoundSettings& s) { compare::set_bound_mode(compare::parse_bound_mode(s.bounds)); }

Command add_compare(CLI::App& app) {
  struct State {
    compare::CompareOptions co;
    bool no_isolate = false;
    BoundSettings b;
  };
  auto s = std::make_shared<State>();
  compare::CompareOptions& co = s->co;
  auto* c = app.add_subcommand("compare", "Run GPU kernels (bundled or from a manifest) against the CPU truth");
  c->add_option("--kernels", co.kernels, "Kernel manifest JSON (default: the bundled kernels)");
  c->add_option("--kernels-root", co.kernels_root, "The engine checkout a manifest with \"sources\": \"kernels_root\" names its shaders in (e.g. engines/ggml-vulkan/ggml-vulkan.json with your ggml or llama.cpp/ggml checkout)");
  c->add_option("--ops", co.ops, "Comma-separated ops (default: every op the manifest has cases for)");
  c->add_option("--seed", co.seed, "First seed")->capture_default_str();
  c->add_option("--seeds", co.seeds, "Number of seeds")->check(CLI::PositiveNumber)->capture_default_str();
  c->add_option("--shapes", co.shapes,
                "remainders, real, all, perf (timing shapes beyond lavapipe's buffers: large matvecs and matmuls, the "
                "lm_heads), or one shape label")
      ->capture_default_str();
  c->add_option("--device", co.device, "Vulkan device index or name substring (default: the first, GPUs first)");
  c->add_option("--shard", co.shard, "I/N: run every N-th case from the I-th (also GTEST_SHARD_INDEX/TOTAL_SHARDS)");
  c->add_option("--subgroup", co.subgroup,
                 "Only this subgroup size (default: every size the device offers); kernels left to the driver "
                 "run once, unpinned");
  c->add_flag("--perf", co.perf,
              "GPU time per case: cold (caches flushed) and warm medians of 5-25 runs in one submission, the stream "
              "figure (back to back over copies of the inputs, as a decode runs it), GB/s and % of the device's copy "
              "bandwidth (docs/benchmarks.md)");
  c->add_option("--json", co.json, "Write a JSON report");
  c->add_option("--junit", co.junit, "Write a JUnit XML report");
  c->add_option("--html", co.html, "Write a self-contained HTML report");
  c->add_option("--results", co.results,
                "Write every result losslessly, for `moeoracle merge` of a sharded run's parts (docs/ci.md)");
  c->add_option("--timeout-ms", co.timeout_ms, "Per-dispatch timeout")->capture_default_str();
  c->add_option("--case", co.case_file, "Replay one saved case file (written by bisect) alone");
  c->add_flag("--no-isolate", s->no_isolate,
              "Run every kernel in this process (default: each kernel's cases in a worker process, so a kernel that "
              "crashes or hangs the driver fails alone)");
  c->add_option("--jobs", co.jobs, "Worker processes at once")->check(CLI::PositiveNumber)->capture_default_str();
  add_bound_options(c, s->b);
  return {c, [s] {
            apply_bounds(s->b);
            compare::CompareOptions& co = s->co;
            co.isolate = !s->no_isolate && co.case_file.empty();
            co.precision_note =
                "transcendental budgets: " + compare::apply_precision(s->b.precision, co.device, co.isolate);
            co.worker_exe = std::filesystem::read_symlink("/proc/self/exe").string();
            return compare::run_compare(co);
          }};
}

Command add_merge(CLI::App& app) {
  struct State {
    std::vector<std::string> files;
    compare::CompareOptions reports;
  };
  auto s = std::make_shared<State>();
  auto* c = app.add_subcommand(
      "merge", "Put the parts of a sharded compare run (compare --shard I/N --results FILE) back together as one run");
  c->add_option("files", s->files, "The results files, one per shard")->required();
  c->add_option("--json", s->reports.json, "Write a JSON report");
  c->add_option("--junit", s->reports.junit, "Write a JUnit XML report");
  c->add_option("--html", s->reports.html, "Write a self-contained HTML report");
  return {c, [s] { return compare::run_merge(s->files, s->reports); }};
}

Command add_mutate(CLI::App& app) {
  struct State {
    compare::MutateOptions mo;
    BoundSettings b;
  };
  auto s = std::make_shared<State>();
  compare::MutateOptions& mo = s->mo;
  auto* m = app.add_subcommand("mutate",
                               "Plant single-site bugs in a manifest's GLSL kernels: which does the gate catch, and how?");
  m->add_option("--kernels", mo.kernels, "Kernel manifest JSON (default: the bundled kernels' GLSL)");
  m->add_option("--kernels-root", mo.kernels_root, "The engine checkout a manifest with \"sources\": \"kernels_root\" names its shaders in (e.g. engines/ggml-vulkan/ggml-vulkan.json with your ggml or llama.cpp/ggml checkout)");
  m->add_option("--ops", mo.ops, "Only kernels of these ops (comma-separated)");
  m->add_option("--kernel", mo.only_kernels, "Only these kernels (comma-separated names)");
  m->add_option("--rules", mo.rules, "Only these rules (comma-separated; see compare/mutate/rules.def)");
  m->add_option("--shapes", mo.shapes, "remainders, real or all")
      ->check(CLI::IsMember({"remainders", "real", "all"}))
      ->capture_default_str();
  m->add_option("--seed", mo.seed, "First seed")->capture_default_str();
  m->add_option("--seeds", mo.seeds, "Seeds per case")->check(CLI::PositiveNumber)->capture_default_str();
  m->add_option("--device", mo.device, "Vulkan device index or name substring");
  m->add_option("--subgroup", mo.subgroup,
                 "Only this subgroup size (default: every size the device offers); kernels left to the driver "
                 "run once, unpinned");
  m->add_option("--timeout-ms", mo.timeout_ms, "Per-dispatch timeout")->capture_default_str();
  m->add_option("--max-per-kernel", mo.max_per_kernel, "Sample at most this many mutants per kernel (0: all)")
      ->capture_default_str();
  m->add_option("--sample-seed", mo.sample_seed, "Seed of the sample")->capture_default_str();
  m->add_option("--mutants", mo.mutants,
                "Only the mutants listed in this file, one \"<kernel> <mutant id>\" per line (e.g. earlier survivors)");
  m->add_option("--equivalent", mo.equivalent, "JSON files of equivalence claims [{kernel, mutant, why}]")
      ->delimiter(',');
  m->add_option("--shard", mo.shard,
                 "I/N: run and report only every N-th mutant from the I-th (the mutants of a whole run, compiled "
                 "here too); --rescore with the N reports gives the whole run's report (docs/ci.md)");
  m->add_option("--rescore", mo.rescore,
                 "Run nothing: score the JSON report of an earlier run again with --equivalent (claims written "
                 "after a long run; the claims it was scored with are dropped), or the N reports of a --shard run "
                 "(comma-separated), merged first")
      ->delimiter(',');
  m->add_flag("!--no-bundled-claims", mo.bundled_claims,
              "Mutating the bundled kernels: do not apply the equivalence claims built in (compare/mutate/equivalent/)");
  m->add_option("--jobs", mo.jobs, "Mutants run at once")->check(CLI::PositiveNumber)->capture_default_str();
  m->add_option("--min-kill-rate", mo.min_kill_rate, "Exit 1 when the kill rate is below this (0..1)")
      ->capture_default_str();
  add_bound_options(m, s->b);
  m->add_option("--json", mo.json, "Write a JSON report");
  m->add_option("--html", mo.html, "Write a self-contained HTML report");
  return {m, [s] {
            apply_bounds(s->b);
            if (s->mo.rescore.empty())  // a rescore runs nothing on a device
              std::fprintf(stderr, "mutate: %s\n", compare::apply_precision(s->b.precision, s->mo.device, true).c_str());
            return compare::mutate_command(s->mo);
          }};
}

Command add_calibrate(CLI::App& app) {
  auto device = std::make_shared<std::string>();
  auto* c = app.add_subcommand("calibrate",
                               "Measure the device's exp/log/sin/cos/inversesqrt/division errors and print the budgets "
                               "compare derives from them");
  c->add_option("--device", *device, "Vulkan device index or name substring");
  return {c, [device] { return compare::calibrate_command(*device); }};
}

}  // namespace moe::cli
