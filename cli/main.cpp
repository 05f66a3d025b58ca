// moeoracle: the CPU ground truth and differential oracle for streaming-MoE engines.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/check.h"
#include "op_registry.h"
#include "compare/run/driver.h"
#include "compare/run/isolate.h"
#include "compare/mutate/mutate.h"
#include "compare/cases/bound_mode.h"
#include "compare/run/calibrate.h"
#include "run.h"
#include "core/simd.h"
#include "selfcheck.h"

namespace moe {
int list_devices_command();  // cli/devices.cpp
}

int main(int argc, char** argv) {
  CLI::App app{"moeoracle: CPU ground truth and differential oracle for streaming-MoE inference engines"};
  // The fast tier's SIMD target is picked at run time (Highway): part of what a figure means.
  app.set_version_flag("--version", [] {
    std::string all;
    for (const std::string& t : moe::simd_targets()) all += (all.empty() ? "" : " ") + t;
    return std::string("moeoracle ") + MOE_VERSION + "\nfast tier SIMD target: " + moe::simd_target() +
           " (this CPU and binary offer: " + all + "; MOE_SIMD=NAME pins one)";
  });
  app.require_subcommand(1);

  moe::SelfcheckOptions sc;
  auto* selfcheck = app.add_subcommand("selfcheck", "Check every CPU op's f32 and fast tiers against the f64 truth");
  selfcheck->add_option("--seed", sc.seed, "Random seed of the inputs")->capture_default_str();
  selfcheck->add_option("--ops", sc.ops, "Comma-separated ops to check (default: all)");
  selfcheck->add_flag("--remainders", sc.remainders, "Also check the remainder shapes (1, 31, 33, 67, 4099, ...)");

  auto* ops = app.add_subcommand("ops", "List the ops of the op list");

  moe::RunOptions ro;
  auto* run = app.add_subcommand("run", "Run the model's forward on the CPU; print argmax tokens and logits stats");
  run->add_option("--model", ro.model, "MLX checkpoint directory or moeflux artifacts directory")->required();
  run->add_option("--tokens", ro.tokens, "Comma-separated token ids");
  run->add_option("--tokens-file", ro.tokens_file, "File of token ids (whitespace or commas)");
  run->add_option("--backend", ro.backend, "ref64 (the truth), ref32 (engine f32 order) or fast")
      ->check(CLI::IsMember({"ref64", "ref32", "fast"}))->capture_default_str();
  run->add_option("--experts-per-token", ro.experts_per_token, "Routed experts per token (default: the model's)");
  run->add_option("--dump", ro.dump, "Write the selected taps to this safetensors file");
  run->add_option("--taps", ro.taps, "Comma-separated globs of tap names to dump (default: all)");
  run->add_option("--snapshot-in", ro.snapshot_in, "Restore engine state from an MFLX snapshot first");
  run->add_option("--snapshot-out", ro.snapshot_out, "Save the engine state (MFLX) after the run");
  run->add_option("--snapshot-version", ro.snapshot_version, "MFLX version to write (1: C engine, 2: Rust port)")
      ->check(CLI::IsMember({1, 2}))->capture_default_str();
  run->add_flag("--decode", ro.decode, "Feed the tokens one at a time (decode) instead of one prefill");
  run->add_option("--threads", ro.threads, "Threads for the fast backend (default: all cores)");
  run->add_option("--qk-norm-eps", ro.qk_norm_eps,
                  "Linear-attention q/k norm epsilon: hf (l2norm, 1e-6 inside the sum: the truth) or engine "
                  "(rms_norm eps 1e-6, as MLX and the engines)")
      ->check(CLI::IsMember({"hf", "engine"}))->capture_default_str();
  run->add_option("--seed", ro.seed, "Seed recorded in the dump metadata");

  moe::InspectOptions io;
  auto* inspect = app.add_subcommand("inspect", "Shapes, dtypes, min/max/mean/std and NaN/Inf counts of a dump");
  inspect->add_option("dump", io.file, "safetensors file")->required();

  moe::DiffOptions dop;
  auto* diff = app.add_subcommand("diff", "Compare two dumps tap by tap in forward order; report the first divergent tap");
  diff->add_option("a", dop.a, "reference dump")->required();
  diff->add_option("b", dop.b, "candidate dump")->required();
  diff->add_option("--threshold", dop.threshold, "max|A-B| / max|A| above which a tap fails")->capture_default_str();
  diff->add_option("--map", dop.map, "JSON mapping B's tensor names (another engine's dump) to tap names");

  auto* devices = app.add_subcommand("devices", "List Vulkan devices: driver, subgroup sizes, limits, timestamps");

  moe::compare::CompareOptions co;
  auto* compare = app.add_subcommand("compare", "Run GPU kernels (bundled or from a manifest) against the CPU truth");
  compare->add_option("--kernels", co.kernels, "Kernel manifest JSON (default: the bundled kernels)");
  compare->add_option("--ops", co.ops, "Comma-separated ops (default: every op the manifest has cases for)");
  compare->add_option("--seed", co.seed, "First seed")->capture_default_str();
  compare->add_option("--seeds", co.seeds, "Number of seeds")->check(CLI::PositiveNumber)->capture_default_str();
  compare->add_option("--shapes", co.shapes, "remainders, real, all, perf (timing shapes beyond lavapipe's buffers: large matvecs and matmuls, the lm_heads), or one shape label")->capture_default_str();
  compare->add_option("--device", co.device, "Vulkan device index or name substring (default: the first, GPUs first)");
  compare->add_option("--shard", co.shard, "I/N: run every N-th case from the I-th (also GTEST_SHARD_INDEX/TOTAL_SHARDS)");
  compare->add_option("--subgroup", co.subgroup, "Only this subgroup size (default: every size the device offers)");
  compare->add_flag("--perf", co.perf,
                    "GPU time per case: cold (caches flushed) and warm medians of 5-25 runs in one submission, the "
                    "stream figure (back to back over copies of the inputs, as a decode runs it), GB/s and % of the "
                    "device's copy bandwidth (docs/benchmarks.md)");
  compare->add_option("--json", co.json, "Write a JSON report");
  compare->add_option("--junit", co.junit, "Write a JUnit XML report");
  compare->add_option("--html", co.html, "Write a self-contained HTML report");
  compare->add_option("--timeout-ms", co.timeout_ms, "Per-dispatch timeout")->capture_default_str();
  compare->add_option("--case", co.case_file, "Replay one saved case file (written by bisect) alone");
  bool no_isolate = false;
  compare->add_flag("--no-isolate", no_isolate,
                    "Run every kernel in this process (default: each kernel's cases in a worker process, so a kernel "
                    "that crashes or hangs the driver fails alone)");
  compare->add_option("--jobs", co.jobs, "Worker processes at once")->check(CLI::PositiveNumber)->capture_default_str();
  std::string bounds = "probabilistic", prec = "measured", precision_json;
  const char* precision_help =
      "Error budgets of exp/log/sin/cos/inversesqrt/division: measured (on the device, at start: the largest error of a "
      "dense sweep x 2, at most the Vulkan rule unless the device breaks it) or spec (the Vulkan precision rules)";
  const char* bounds_help =
      "Error bounds of sums: probabilistic (lambda = 10, false alarms < 1e-13 per element; assumes round to nearest) "
      "or worst (any rounding; looser)";
  // The two settings of every command that builds cases: compare, mutate, bisect.
  auto add_bounds = [&](CLI::App* sub) {
    sub->add_option("--bounds", bounds, bounds_help)->check(CLI::IsMember({"probabilistic", "worst"}))
        ->capture_default_str();
    sub->add_option("--precision", prec, precision_help)->check(CLI::IsMember({"measured", "spec"}))
        ->capture_default_str();
  };
  add_bounds(compare);
  compare->add_option("--precision-json", precision_json)->group("");  // a worker: the parent's measurement
  // The worker side of isolation (compare/run/isolate.h), started by compare itself.
  moe::compare::WorkerTask task;
  compare->add_option("--worker-fd", task.fd)->group("");
  compare->add_option("--worker-op", task.op)->group("");
  compare->add_option("--worker-plan", task.plan)->group("");
  compare->add_option("--worker-plan-index", task.plan_index)->group("");
  compare->add_option("--worker-kernel", task.kernels)->group("");
  compare->add_option("--worker-resume", task.resume)->group("");

  moe::compare::MutateOptions mo;
  auto* mutate = app.add_subcommand("mutate", "Plant single-site bugs in a manifest's GLSL kernels: which does the gate catch, and how?");
  mutate->add_option("--kernels", mo.kernels, "Kernel manifest JSON (default: the bundled kernels' GLSL)");
  mutate->add_option("--ops", mo.ops, "Only kernels of these ops (comma-separated)");
  mutate->add_option("--kernel", mo.only_kernels, "Only these kernels (comma-separated names)");
  mutate->add_option("--rules", mo.rules, "Only these rules (comma-separated; see compare/mutate/rules.def)");
  mutate->add_option("--shapes", mo.shapes, "remainders, real or all")->check(CLI::IsMember({"remainders", "real", "all"}))
      ->capture_default_str();
  mutate->add_option("--seed", mo.seed, "First seed")->capture_default_str();
  mutate->add_option("--seeds", mo.seeds, "Seeds per case")->check(CLI::PositiveNumber)->capture_default_str();
  mutate->add_option("--device", mo.device, "Vulkan device index or name substring");
  mutate->add_option("--subgroup", mo.subgroup, "Only this subgroup size (default: every size the device offers)");
  mutate->add_option("--timeout-ms", mo.timeout_ms, "Per-dispatch timeout")->capture_default_str();
  mutate->add_option("--max-per-kernel", mo.max_per_kernel, "Sample at most this many mutants per kernel (0: all)")
      ->capture_default_str();
  mutate->add_option("--sample-seed", mo.sample_seed, "Seed of the sample")->capture_default_str();
  mutate->add_option("--mutants", mo.mutants,
                     "Only the mutants listed in this file, one \"<kernel> <mutant id>\" per line (e.g. earlier survivors)");
  mutate->add_option("--equivalent", mo.equivalent, "JSON files of equivalence claims [{kernel, mutant, why}]")
      ->delimiter(',');
  mutate->add_flag("!--no-bundled-claims", mo.bundled_claims,
                   "Mutating the bundled kernels: do not apply the equivalence claims built in (compare/mutate/equivalent/)");
  mutate->add_option("--jobs", mo.jobs, "Mutants run at once")->check(CLI::PositiveNumber)->capture_default_str();
  mutate->add_option("--min-kill-rate", mo.min_kill_rate, "Exit 1 when the kill rate is below this (0..1)")
      ->capture_default_str();
  add_bounds(mutate);
  mutate->add_option("--json", mo.json, "Write a JSON report");
  mutate->add_option("--html", mo.html, "Write a self-contained HTML report");

  moe::BisectOptions bo;
  auto* bisect = app.add_subcommand("bisect", "Run the whole model on GPU kernels against the CPU truth; name the first op that fails");
  bisect->add_option("--model", bo.model, "MLX checkpoint directory or moeflux artifacts directory")->required();
  bisect->add_option("--kernels", bo.kernels, "Kernel manifest JSON (default: the bundled kernels)");
  bisect->add_option("--tokens", bo.tokens, "Comma-separated token ids");
  bisect->add_option("--tokens-file", bo.tokens_file, "File of token ids (whitespace or commas)");
  bisect->add_option("--mode", bo.mode, "isolated (every op gets the truth's inputs) or free (the GPU runs on its own outputs)")
      ->check(CLI::IsMember({"isolated", "free"}))->capture_default_str();
  bisect->add_option("--prefill", bo.prefill, "Tokens in the first forward call (the rest are decoded one at a time)")
      ->capture_default_str();
  bisect->add_option("--device", bo.device, "Vulkan device index or name substring");
  bisect->add_option("--subgroup", bo.subgroup, "Pin kernels to this subgroup size (default: the device's)");
  bisect->add_option("--experts-per-token", bo.experts_per_token, "Routed experts per token (default: the model's)");
  bisect->add_option("--qk-norm-eps", bo.qk_norm_eps, "hf (the truth) or engine")
      ->check(CLI::IsMember({"hf", "engine"}))->capture_default_str();
  bisect->add_option("--case-out", bo.case_out, "Where to write the first failure's case file")->capture_default_str();
  bisect->add_option("--html", bo.html, "Write a self-contained HTML report");
  bisect->add_option("--json", bo.json, "Write a JSON report");
  bisect->add_option("--timeout-ms", bo.timeout_ms, "Per-dispatch timeout")->capture_default_str();
  add_bounds(bisect);
  std::string cal_device;
  auto* calibrate = app.add_subcommand("calibrate", "Measure the device's exp/log/sin/cos/inversesqrt/division errors "
                                                    "and print the budgets compare derives from them");
  calibrate->add_option("--device", cal_device, "Vulkan device index or name substring");

  moe::FixtureOptions fo;
  auto* fixture = app.add_subcommand("fixture", "Write a deterministic synthetic model (MLX or moeflux format)");
  fixture->add_option("--preset", fo.preset, "tiny, a3b-2layers, a17b-2layers (Qwen), ds3-tiny or cogito-2layers (DeepSeek-V3 / Cogito-V2 shapes)")->capture_default_str();
  fixture->add_option("--out", fo.out, "Output directory")->required();
  fixture->add_option("--format", fo.format, "mlx or moeflux")->check(CLI::IsMember({"mlx", "moeflux"}))->capture_default_str();
  fixture->add_option("--seed", fo.seed, "Seed")->capture_default_str();
  fixture->add_option("--layers", fo.layers,
                      "a3b-/a17b-/cogito-2layers: the real model's first N layers instead of the two (linear + full, or dense + MoE) "
                      "(a model larger than memory: docs/resources.md)");

  try {
    // MOE_SIMD=NAME runs the fast tier on another SIMD target than the best (to compare paths).
    if (const char* t = std::getenv("MOE_SIMD"); t && *t) moe::simd_pin(t);
    app.parse(argc, argv);
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moeoracle: error: MOE_SIMD: %s\n", e.what());
    return 2;
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    moe::compare::set_bound_mode(moe::compare::parse_bound_mode(bounds));
    if (*selfcheck) return moe::run_selfcheck(sc);
    if (*run) return moe::run_model(ro);
    if (*inspect) return moe::inspect_dump(io);
    if (*diff) return moe::diff_dumps(dop);
    if (*fixture) return moe::make_fixture(fo);
    if (*devices) return moe::list_devices_command();
    if (*compare) {
      if (task.fd >= 0) {
        moe::compare::set_precision(precision_json.empty()
                                        ? moe::compare::spec_precision()
                                        : moe::compare::precision_from_json(nlohmann::json::parse(precision_json)));
        return moe::compare::run_worker(co, task);
      }
      co.isolate = !no_isolate && co.case_file.empty();
      co.precision_note = "transcendental budgets: " + moe::compare::apply_precision(prec, co.device, co.isolate);
      co.worker_exe = std::filesystem::read_symlink("/proc/self/exe").string();
      return moe::compare::run_compare(co);
    }
    if (*bisect) {
      std::fprintf(stderr, "bisect: %s\n", moe::compare::apply_precision(prec, bo.device, false).c_str());
      return moe::run_bisect(bo);
    }
    if (*mutate) {
      std::fprintf(stderr, "mutate: %s\n", moe::compare::apply_precision(prec, mo.device, true).c_str());
      return moe::compare::mutate_command(mo);
    }
    if (*calibrate) return moe::compare::calibrate_command(cal_device);
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
