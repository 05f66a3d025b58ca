// `moeoracle bisect`: the model-level differential (compare/model/model_compare.h) from the
// command line: console summary, first failure with its case file, --html and --json reports.
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.h"
#include "compare/model/html_report.h"
#include "compare/model/model_compare.h"
#include "compare/run/calibrate.h"
#include "oracle/tokens.h"

namespace moe::cli {
namespace {

struct BisectOptions {
  std::string model, kernels, kernels_root, device, tokens, tokens_file;
  std::string mode = "isolated";
  int64_t prefill = 1, chunk = 1;
  uint32_t subgroup = 0;
  int64_t experts_per_token = 0;
  std::string qk_norm_eps = "hf";
  std::string case_out = "bisect_case.safetensors";
  std::string html, json, dump, truth_dump, mutant;
  uint64_t timeout_ms = 60000;
};

int run_bisect(const BisectOptions& o) {
  compare::ModelCompareOptions mo;
  mo.model = o.model, mo.kernels = o.kernels, mo.kernels_root = o.kernels_root, mo.device = o.device;
  mo.mode = o.mode, mo.prefill = o.prefill, mo.chunk = o.chunk;
  mo.subgroup = o.subgroup, mo.timeout_ms = o.timeout_ms, mo.case_out = o.case_out, mo.dump = o.dump,
  mo.truth_dump = o.truth_dump, mo.mutant = o.mutant;
  mo.tokens = read_tokens(o.tokens, o.tokens_file, "bisect");
  mo.forward.experts_per_tok = o.experts_per_token;
  mo.forward.qk_norm_eps = o.qk_norm_eps == "engine" ? QkNormEps::Engine : QkNormEps::Hf;
  const compare::ModelCompareResult r = compare::run_model_compare(mo);
  compare::write_model_console(std::cout, r);
  if (!o.html.empty()) compare::save_model_html(o.html, r);
  if (!o.json.empty()) compare::save_model_json(o.json, r);
  return r.failed > 0 ? 1 : 0;
}

}  // namespace

Command add_bisect(CLI::App& app) {
  struct State {
    BisectOptions bo;
    BoundSettings b;
  };
  auto s = std::make_shared<State>();
  BisectOptions& bo = s->bo;
  auto* b = app.add_subcommand("bisect",
                               "Run the whole model on GPU kernels against the CPU truth; name the first op that fails");
  add_model_options(b, bo.model, bo.tokens, bo.tokens_file);
  b->add_option("--kernels", bo.kernels, "Kernel manifest JSON (default: the bundled kernels)");
  b->add_option("--kernels-root", bo.kernels_root, "The engine checkout a manifest with \"sources\": \"kernels_root\" names its shaders in (e.g. engines/ggml-vulkan/ggml-vulkan.json with your ggml or llama.cpp/ggml checkout)");
  b->add_option("--mode", bo.mode, "isolated (every op gets the truth's inputs) or free (the GPU runs on its own outputs)")
      ->check(CLI::IsMember({"isolated", "free"}))
      ->capture_default_str();
  b->add_option("--prefill", bo.prefill, "Tokens in the first forward call")->capture_default_str();
  b->add_option("--chunk", bo.chunk,
                "Tokens in each later forward call (1: decoded one at a time; more: a corpus in batches)")
      ->capture_default_str();
  b->add_option("--device", bo.device, "Vulkan device index or name substring");
  b->add_option("--subgroup", bo.subgroup, "Pin kernels to this subgroup size (default: the device's)");
  b->add_option("--experts-per-token", bo.experts_per_token, "Routed experts per token (default: the model's)");
  b->add_option("--qk-norm-eps", bo.qk_norm_eps, "hf (the truth) or engine")
      ->check(CLI::IsMember({"hf", "engine"}))
      ->capture_default_str();
  b->add_option("--case-out", bo.case_out, "Where to write the first failure's case file")->capture_default_str();
  b->add_option("--html", bo.html, "Write a self-contained HTML report");
  b->add_option("--json", bo.json, "Write a JSON report");
  b->add_option("--dump", bo.dump, "--mode free: write the GPU forward's taps (a dump `judge` takes)");
  b->add_option(
      "--truth-dump", bo.truth_dump,
      "--mode free: write the truth run's taps on the same tokens (`drift TRUTH_DUMP DUMP`: KLD, same top p)");
  b->add_option(
      "--mutant", bo.mutant,
      "Run one mutant of a GLSL kernel: \"<kernel> <mutant id>\" (as mutate reports it) or \"<kernel> #<index>\"");
  b->add_option("--timeout-ms", bo.timeout_ms, "Per-dispatch timeout")->capture_default_str();
  add_bound_options(b, s->b);
  return {b, [s] {
            apply_bounds(s->b);
            std::fprintf(stderr, "bisect: %s\n", compare::apply_precision(s->b.precision, s->bo.device, false).c_str());
            return run_bisect(s->bo);
          }};
}

}  // namespace moe::cli
