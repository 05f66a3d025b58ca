#include "compare/run/driver.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "compare/run/case_file.h"
#include "compare/run/isolate.h"
#include "compare/run/perf.h"
#include "compare/run/shards.h"
#include "compare/vk/runner.h"
#include "core/check.h"

namespace moe::compare {

namespace {

// --case FILE: the saved case alone, on the plan that ran it (by label) when the manifest still
// has it, else on every plan of its op; at every subgroup size.
std::vector<CaseResult> replay_case(vk::Context& ctx, const CompareOptions& opt) {
  const CaseFile f = load_case_file(opt.case_file);
  const Manifest m = load_kernels(opt.kernels.empty() ? f.manifest : opt.kernels, opt.kernels_root);
  std::string why;
  std::vector<Plan> plans = plans_for(m, f.c.op, &why);
  MOE_CHECK(!plans.empty(), opt.case_file << ": the manifest " << (m.path.empty() ? "(bundled)" : m.path) << " has "
                                          << why);
  std::vector<Plan> same;
  for (const Plan& p : plans)
    if (p.label == f.plan) same.push_back(p);
  if (!same.empty()) plans = same;
  if (!opt.quiet) {
    std::printf("case %s: op %s [%s]", opt.case_file.c_str(), f.c.op.c_str(), f.c.shape.c_str());
    for (const auto& [k, v] : f.origin) std::printf(" %s=%s", k.c_str(), v.c_str());
    std::printf("\n\n");
  }
  std::vector<CaseResult> results;
  for (const Plan& plan : plans)
    for (uint32_t sg : plan_subgroup_sizes(plan, ctx.info(), opt.subgroup)) {
      results.push_back(run_plan_case(ctx, m, plan, f.c, sg, opt.timeout_ms, nullptr, opt.perf));
      results.back().case_file = opt.case_file;
    }
  return results;
}

}  // namespace

std::vector<CaseResult> compare_cases(const CompareOptions& opt) {
  if (opt.isolate && opt.case_file.empty()) return compare_isolated(opt);
  // --perf times kernels reading device-local memory; otherwise fast host read-back.
  vk::Context ctx(opt.device, opt.perf ? vk::Context::Memory::DeviceSpeed : vk::Context::Memory::Readback);
  if (ctx.info().type == "cpu") poison_fresh_memory();
  if (!opt.case_file.empty()) return replay_case(ctx, opt);
  const CompareRun run = prepare_run(opt, ctx.info());
  print_header(opt, ctx.info(), run.manifest);
  std::vector<CaseResult> results = run.unrunnable;
  for (const std::string& op : run.ops) {
    std::vector<PlanRun> plans;
    for (const auto& [wop, pr] : run.work)
      if (wop == op) plans.push_back(pr);
    run_op_cases(ctx, run.manifest, op, plans, opt, 0, {nullptr, [&](CaseResult&& r) { results.push_back(std::move(r)); }});
  }
  return merge_results(std::move(results), run.ops);
}

namespace {

// The console lines, the reports and the exit code of a run's results.
int report_results(const CompareOptions& opt, const std::vector<CaseResult>& results) {
  write_console(std::cout, results);
  if (opt.perf) write_perf_report(std::cout, opt, results);
  if (!opt.json.empty()) save_report(opt.json, ReportFormat::Json, results);
  if (!opt.junit.empty()) save_report(opt.junit, ReportFormat::Junit, results);
  if (!opt.html.empty()) save_report(opt.html, ReportFormat::Html, results);
  return summarize(results).failed > 0 ? 1 : 0;
}

}  // namespace

int run_merge(const std::vector<std::string>& files, const CompareOptions& reports) {
  std::vector<ResultsFile> parts;
  for (const std::string& f : files) parts.push_back(load_results_file(f));
  return report_results(reports, merge_shards(parts));
}

int run_compare(const CompareOptions& opt) {
  const std::vector<CaseResult> results = compare_cases(opt);
  // A shape label that names no case is a typo, not a pass (a CI gate must not go green on it).
  const bool named_shape = opt.case_file.empty() && opt.shapes != "all" && opt.shapes != "real" &&
                           opt.shapes != "remainders" && opt.shapes != "perf";
  MOE_CHECK(!named_shape || opt.shard.size() > 0 ||
                std::any_of(results.begin(), results.end(), [&](const CaseResult& r) { return r.shape == opt.shapes; }),
            "compare: --shapes '" << opt.shapes << "' is neither a set (remainders, real, all, perf) nor the label of a "
                                  << "case of the ops run (labels: the [...] of a console line)");
  if (!opt.results.empty()) save_results_file(opt.results, opt, results);
  return report_results(opt, results);
}

}  // namespace moe::compare
