// `diverge`: free-running greedy generation of a candidate tier against the truth until the first
// different token, and whether that was a near-tie (oracle/diverge.h).
#include "oracle/diverge.h"

#include <cstdio>
#include <memory>

#include "commands.h"
#include "oracle/tokens.h"

namespace moe::cli {
namespace {

struct DivergeCliOptions {
  std::string model, tokens, tokens_file, backend = "fast";
  int64_t steps = 64;
  ForwardSettings forward;
};

int run_diverge(const DivergeCliOptions& o) {
  const std::vector<int32_t> prompt = read_tokens(o.tokens, o.tokens_file, "diverge");
  auto model = Model::load(o.model);
  check_token_range(prompt, model->config().vocab, "diverge");
  DivergeOptions d;
  d.steps = o.steps;
  d.forward = forward_options(o.forward);
  const Divergence r = first_divergence(*model, prompt, o.backend, d);
  std::printf("diverge: %s against the truth from a %zu-token prompt, up to %lld steps\n", o.backend.c_str(),
              prompt.size(), (long long)o.steps);
  std::printf("agreed %zu tokens:", r.agreed.size());
  for (int32_t t : r.agreed) std::printf(" %d", t);
  std::printf("\n");
  if (!r.diverged) {
    std::printf("ok: no divergence in %lld steps\n", (long long)o.steps);
    return 0;
  }
  std::printf(
      "first divergence at step %lld: truth %d, %s %d; truth's margin %.4g, %s's logit error %.4g, "
      "honest f32 error %.4g, tolerance %.4g\n",
      (long long)r.step, r.truth_token, o.backend.c_str(), r.candidate_token, r.margin, o.backend.c_str(),
      r.candidate_err, r.honest_err, r.tolerance);
  if (r.near_tie) {
    std::printf("near-tie: an honest f32 implementation could swap these two tokens\n");
    return 0;
  }
  std::printf("FAIL: not a near-tie: the margin exceeds what an honest f32 order explains\n");
  return 1;
}

}  // namespace

Command add_diverge(CLI::App& app) {
  auto o = std::make_shared<DivergeCliOptions>();
  auto* d = app.add_subcommand("diverge",
                               "Greedy generation of a CPU tier against the truth until the first different token; "
                               "a near-tie or not (docs/judge.md)");
  add_model_options(d, o->model, o->tokens, o->tokens_file);
  d->add_option("--backend", o->backend, "The candidate: ref32 or fast")
      ->check(CLI::IsMember({"ref32", "fast"}))
      ->capture_default_str();
  d->add_option("--steps", o->steps, "Tokens to generate at most")->capture_default_str();
  add_forward_options(d, o->forward);
  return {d, [o] { return run_diverge(*o); }};
}

}  // namespace moe::cli
