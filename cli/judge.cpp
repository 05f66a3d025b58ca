// `judge`: per-module verdicts on an engine's own forward from its dump (oracle/judge.h): each tapped
// module re-run by the truth on the engine's own inputs and held to the calibrated bound.
#include "oracle/judge.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "commands.h"
#include "core/check.h"
#include "oracle/atomic_file.h"
#include "oracle/tokens.h"

namespace moe::cli {
namespace {

struct JudgeCliOptions {
  std::string model, tokens, tokens_file, dump, map, json, html;
  std::string storage = "f32";
  double multiple = 16;
  ForwardSettings forward;
};

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

int run_judge(const JudgeCliOptions& o) {
  std::vector<int32_t> tokens;
  if (!o.tokens.empty() || !o.tokens_file.empty()) tokens = read_tokens(o.tokens, o.tokens_file, "judge");
  JudgeOptions jo;
  jo.storage = parse_storage(o.storage), jo.multiple = o.multiple;
  jo.forward = forward_options(o.forward);
  const JudgeReport rep = judge_dump(o.model, o.dump, tokens, o.map, jo);

  std::printf(
      "judge %s against %s: %lld tokens, storage %s, bound = %g x the honest f32 error (docs/judge.md) + 1 ulp of the "
      "storage\n",
      o.dump.c_str(), o.model.c_str(), (long long)rep.tokens, storage_name(rep.storage), rep.multiple);
  std::printf("%-52s %4s %6s %6s %10s %s\n", "module (tap)", "fed", "tokens", "failed", "err/bound",
              "first failing token");
  for (const ModuleVerdict& m : rep.modules) {
    std::printf("%-52s %4s %6lld %6lld %10s %s%s%s\n", m.tap.c_str(), m.fed ? "yes" : "no", (long long)m.judged,
                (long long)m.failed, fmt(m.worst_ratio).c_str(),
                m.first_failed_token >= 0 ? std::to_string(m.first_failed_token).c_str() : "-",
                m.note.empty() ? "" : "  ", m.note.c_str());
  }
  for (const std::string& n : rep.not_judged) std::printf("not judged: %s\n", n.c_str());
  if (!rep.unmapped.empty())
    std::printf("%zu engine tensors no rule of the map names (first: %s)\n", rep.unmapped.size(),
                rep.unmapped.front().c_str());
  if (!o.json.empty()) write_file_atomic(o.json, "judge report", judge_report_json(rep));
  if (!o.html.empty()) write_file_atomic(o.html, "judge report", judge_report_html(rep, o.dump));
  if (rep.first_failed < 0) {
    std::printf("ok: %zu tapped modules, every token within its bound\n", rep.modules.size());
    return 0;
  }
  const ModuleVerdict& f = rep.modules[size_t(rep.first_failed)];
  const size_t t = size_t(f.first_failed_token);
  std::printf("FAIL: first failing module %s at token %lld (position %lld): error %s, bound %s\n", f.tap.c_str(),
              (long long)t, (long long)t, fmt(f.err[t]).c_str(), fmt(f.bound[t]).c_str());
  return 1;
}

}  // namespace

Command add_judge(CLI::App& app) {
  auto o = std::make_shared<JudgeCliOptions>();
  auto* j = app.add_subcommand("judge",
                               "Per-module verdicts on an engine's own forward: each tapped module re-run by the "
                               "truth on the engine's inputs from its dump (docs/judge.md)");
  j->add_option("dump", o->dump, "The engine's dump (safetensors: our tap names, or its own with --map)")->required();
  add_model_options(j, o->model, o->tokens, o->tokens_file);
  j->add_option("--map", o->map, "The engine's tensor names as our taps (diff --map's file)");
  j->add_option("--storage", o->storage, "How the engine keeps the dumped tensors: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  j->add_option("--multiple", o->multiple, "The calibrated allowance over an honest f32 implementation's error")
      ->capture_default_str();
  add_forward_options(j, o->forward);
  j->add_option("--json", o->json, "Write the verdicts (per module, per token) as JSON");
  j->add_option("--html", o->html, "Write a self-contained HTML report (a cell per module and token)");
  return {j, [o] { return run_judge(*o); }};
}

}  // namespace moe::cli
