// Plans: which kernels run an op, loading manifests, the units of an op's cases, and their
// merged results (plan.h).
#include "compare/run/plan.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <unistd.h>

#include "compare/manifest/bundled_manifest.h"
#include "compare/run/case_file.h"
#include "compare/cases/cases.h"
#include "compare/cases/conventions.h"
#include "compare/manifest/chains.h"
#include "compare/run/trace.h"
#include "compare/manifest/manifest.h"
#include "compare/decide/metrics.h"
#include "compare/report/report.h"
#include "compare/vk/runner.h"
#include "core/strings.h"
#include "core/check.h"

namespace moe::compare {
const Conventions& plan_conventions(const Plan& plan) {
  static const Conventions kNone;
  // A sequence's kernels declare the same conventions (load_manifest checks); chain stages none.
  return plan.kernels.empty() || !plan.kernels[0] ? kNone : plan.kernels[0]->conventions;
}

std::vector<Plan> plans_for(const Manifest& m, const std::string& op, std::string* why_none) {
  std::vector<Plan> plans;
  for (const KernelEntry& k : m.kernels) {
    if (m.sequence_of(k.name)) continue;  // a pass of a sequence, not a plan of its own
    bool match = k.ops.size() == 1 && k.ops[0] == op;
    if (!match && k.ops.size() > 1)
      if (const Chain* ch = find_chain(op); ch && ch->stages.size() == k.ops.size()) {
        match = true;
        for (size_t i = 0; i < k.ops.size(); ++i) match = match && k.ops[i] == ch->stages[i].op;
      }
    if (match) plans.push_back({op, k.name, {&k}, {nullptr}, k.subgroup_sizes, {}, k.driver_subgroup});
  }
  for (const KernelSequence& seq : m.sequences) {
    if (seq.op != op) continue;
    Plan p{op, "", {}, {}, {}, {}, true};
    std::optional<std::vector<uint32_t>> sizes;  // the sizes every kernel accepts (unset: any)
    for (const std::string& name : seq.kernels) {
      const KernelEntry* k = nullptr;
      for (const KernelEntry& e : m.kernels)
        if (e.name == name) k = &e;
      p.label += (p.label.empty() ? "" : " -> ") + name;
      p.kernels.push_back(k), p.stages.push_back(nullptr);
      p.driver_subgroup = p.driver_subgroup && k->driver_subgroup;
      if (k->subgroup_sizes.empty()) continue;
      std::vector<uint32_t> both;
      for (uint32_t s : k->subgroup_sizes)
        if (!sizes || std::count(sizes->begin(), sizes->end(), s)) both.push_back(s);
      sizes = both;
    }
    if (sizes) p.subgroup_sizes = sizes->empty() ? std::vector<uint32_t>{0xffffffffu} : *sizes;
    plans.push_back(std::move(p));
  }
  if (const Chain* ch = find_chain(op)) {
    Plan p{op, "", {}, {}, {}, {}, true};
    std::string missing;
    std::optional<std::vector<uint32_t>> sizes;  // unset: every stage runs at any size
    for (const ChainStage& st : ch->stages) {
      std::vector<const KernelEntry*> alts;
      for (const KernelEntry& k : m.kernels)
        if (k.ops.size() == 1 && k.ops[0] == st.op) alts.push_back(&k);
      if (alts.empty()) {
        missing += (missing.empty() ? "" : ", ") + st.op;
        continue;
      }
      std::string names;
      for (const KernelEntry* k : alts) names += (names.empty() ? "" : "|") + k->name;
      p.label += (p.label.empty() ? "" : " -> ") + names;
      p.kernels.push_back(alts[0]), p.stages.push_back(&st), p.alternatives.push_back(alts);
      // The sizes some alternative of this stage accepts (empty list: any).
      std::vector<uint32_t> stage_sizes;
      bool any = false;
      for (const KernelEntry* k : alts) {
        p.driver_subgroup = p.driver_subgroup && k->driver_subgroup;
        if (k->subgroup_sizes.empty()) any = true;
        for (uint32_t s : k->subgroup_sizes)
          if (!std::count(stage_sizes.begin(), stage_sizes.end(), s)) stage_sizes.push_back(s);
      }
      if (any) continue;
      if (!sizes) {
        sizes = stage_sizes;
      } else {
        std::vector<uint32_t> both;
        for (uint32_t s : *sizes)
          if (std::count(stage_sizes.begin(), stage_sizes.end(), s)) both.push_back(s);
        sizes = both;
      }
    }
    if (sizes) p.subgroup_sizes = sizes->empty() ? std::vector<uint32_t>{0xffffffffu} : *sizes;  // none in common
    if (missing.empty())
      plans.push_back(std::move(p));
    else if (plans.empty() && why_none)
      *why_none = "no kernel for op '" + op + "' and no kernel for chain stage(s) " + missing;
  }
  if (plans.empty() && why_none && why_none->empty()) *why_none = "no kernel for op '" + op + "'";
  return plans;
}

Manifest load_kernels(const std::string& path, const std::string& kernels_root, const std::set<std::string>* only) {
  if (path.empty() || path == "bundled") {
    MOE_CHECK(kernels_root.empty(), "--kernels-root " << kernels_root << " needs --kernels (an engine's manifest)");
    return load_bundled_manifest(false, only);
  }
  return load_manifest(path, only, file_system(), kernels_root);
}

std::vector<uint32_t> plan_subgroup_sizes(const Plan& plan, const vk::DeviceInfo& info, uint32_t only) {
  if (plan.driver_subgroup) return {0};  // not pinned: once, at the driver's choice
  std::vector<uint32_t> sizes = info.subgroup_sizes();
  if (!plan.subgroup_sizes.empty()) {
    std::vector<uint32_t> both;
    for (uint32_t s : sizes)
      if (std::count(plan.subgroup_sizes.begin(), plan.subgroup_sizes.end(), s)) both.push_back(s);
    sizes = both;
  }
  if (only) sizes = {only};
  if (!info.subgroup_size_control && sizes.size() == 1 && !only) sizes = {0};  // the driver's own size
  return sizes;
}

Shard parse_shard_text(const std::string& text, const std::string& what) {
  Shard sh;
  if (!text.empty())
    MOE_CHECK(std::sscanf(text.c_str(), "%ld/%ld", &sh.index, &sh.count) == 2 && sh.count > 0 && sh.index >= 0 &&
                  sh.index < sh.count,
              what << " '" << text << "', expected I/N with 0 <= I < N");
  return sh;
}

Shard parse_shard(const CompareOptions& opt) {
  std::string text = opt.shard;
  if (text.empty() && std::getenv("GTEST_TOTAL_SHARDS") && std::getenv("GTEST_SHARD_INDEX"))
    text = std::string(std::getenv("GTEST_SHARD_INDEX")) + "/" + std::getenv("GTEST_TOTAL_SHARDS");
  return parse_shard_text(text, "compare: --shard");
}

void run_op_cases(vk::Context& ctx, const Manifest& m, const std::string& op, const std::vector<PlanRun>& plans,
                  const CompareOptions& opt, int64_t resume, const UnitHooks& hooks) {
  const Shard shard = parse_shard(opt);
  // Sharding: by seed when there are at least as many seeds as shards (each shard then builds
  // only its own seeds' cases), else by the case's index within the op. Disjoint and complete.
  const bool named_shape = opt.shapes != "all" && opt.shapes != "real" && opt.shapes != "remainders" && opt.shapes != "perf";
  const bool by_seed = shard.count > 1 && opt.seeds >= shard.count;
  int64_t case_index = 0, unit = 0;
  for (int s = 0; s < opt.seeds; ++s) {
    if (by_seed && s % shard.count != shard.index) continue;
    // Cases are built once per seed (the f64 truth of big cases is the costly part) and run on
    // every plan, unless every unit of this seed was already run (a resumed worker).
    // Per distinct "conventions" of the plans (compare/cases/conventions.h): the same shapes and
    // draws with those op fields set, so case positions agree across them.
    std::map<Conventions, std::vector<OpCase>> by_conv;
    {
      PhaseClock build([&] { return op + " seed " + std::to_string(opt.seed + uint64_t(s)) + ": building its cases"; });
      for (const PlanRun& pr : plans) {
        const Conventions& conv = plan_conventions(*pr.plan);
        if (by_conv.count(conv)) continue;
        const std::string where = (m.path.empty() ? std::string("(bundled)") : m.path) + ": kernel '" +
                                  pr.plan->label + "'";
        std::vector<OpCase>& cases = by_conv[conv];
        cases = make_cases(op, named_shape ? "all" : opt.shapes, opt.seed + uint64_t(s), "", conv, where);
        // A label of a timing shape (`--shapes perf`, as a failure's reproduce line names it): those
        // cases are built only when no remainder or real case has the label (they are large).
        if (named_shape && std::none_of(cases.begin(), cases.end(), [&](const OpCase& c) { return c.shape == opt.shapes; }))
          cases = make_cases(op, "perf", opt.seed + uint64_t(s), opt.shapes, conv, where);
      }
    }  // the clock prints the building's time here (MOE_TRACE_TIMES)
    const size_t n_cases = by_conv.empty() ? 0 : by_conv.begin()->second.size();
    for (const auto& [conv, cases] : by_conv)  // conventions change fields, never the case list
      MOE_CHECK(cases.size() == n_cases, "compare: " << op << " has " << cases.size() << " cases under conventions "
                                                     << conventions_text(conv) << ", " << n_cases << " without");
    for (size_t pos = 0; pos < n_cases; ++pos) {
      const OpCase& first = by_conv.begin()->second[pos];
      if (named_shape && first.shape != opt.shapes) continue;
      if (!by_seed && case_index++ % shard.count != shard.index) continue;
      for (const PlanRun& pr : plans)
        for (uint32_t sg : pr.sizes) {
          const OpCase& c = by_conv.at(plan_conventions(*pr.plan))[pos];
          if (unit++ < resume) continue;
          if (hooks.start) {
            CaseResult proto;
            proto.op = c.op, proto.kernel = pr.plan->label, proto.manifest = m.path, proto.params = c.params;
            proto.shape = c.shape, proto.seed = c.seed, proto.subgroup = sg;
            proto.case_pos = int64_t(pos), proto.plan_index = int(pr.index);
            hooks.start(unit - 1, proto, int(std::max<size_t>(1, c.steps.size())));
          }
          CaseResult r = run_plan_case(ctx, m, *pr.plan, c, sg, opt.timeout_ms, nullptr, opt.perf);
          r.case_pos = int64_t(pos), r.plan_index = int(pr.index);
          hooks.result(std::move(r));
        }
    }
  }
}

std::vector<CaseResult> merge_results(std::vector<CaseResult> rs, const std::vector<std::string>& ops) {
  std::map<std::string, size_t> op_order;
  for (size_t i = 0; i < ops.size(); ++i) op_order.emplace(ops[i], i);
  auto key = [&](const CaseResult& r) {
    const auto o = op_order.find(r.op);
    return std::make_tuple(o == op_order.end() ? ops.size() : o->second, r.seed, r.case_pos);
  };
  std::stable_sort(rs.begin(), rs.end(), [&](const CaseResult& a, const CaseResult& b) {
    return std::make_tuple(key(a), a.plan_index) < std::make_tuple(key(b), b.plan_index);
  });
  // Every plan runs a case; a case that some plan ran is not reported as skipped by the others
  // (an op split over kernels by limits, matmul_q4/matmul_q8); a case that no plan accepts is one
  // SKIP line with every plan's reason. Plan-level lines (case_pos < 0) stay as they are.
  std::vector<CaseResult> out;
  for (size_t i = 0; i < rs.size();) {
    size_t j = i + 1;
    while (j < rs.size() && rs[i].case_pos >= 0 && key(rs[j]) == key(rs[i])) ++j;
    const bool ran = std::any_of(rs.begin() + std::ptrdiff_t(i), rs.begin() + std::ptrdiff_t(j),
                                 [](const CaseResult& r) { return !r.skipped; });
    if (ran || j - i == 1) {
      for (size_t k = i; k < j; ++k)
        if (!rs[k].skipped || j - i == 1) out.push_back(std::move(rs[k]));
    } else {
      CaseResult merged = rs[i];
      merged.kernel.clear(), merged.skip_reason = "no kernel accepts the case:";
      std::set<std::string> seen;
      for (size_t k = i; k < j; ++k)
        if (seen.insert(rs[k].kernel).second) {
          merged.kernel += (merged.kernel.empty() ? "" : ", ") + rs[k].kernel;
          merged.skip_reason += " " + rs[k].skip_reason + ";";
        }
      merged.skip_reason.pop_back();
      if (seen.size() > 3) merged.kernel = std::to_string(seen.size()) + " kernels";  // each reason names its kernel
      out.push_back(std::move(merged));
    }
    i = j;
  }
  return out;
}

namespace {

// The ops to compare when --ops is not given: every op with cases that the manifest covers,
// in the case list's order.
std::vector<std::string> default_ops(const Manifest& m) {
  std::vector<std::string> ops;
  for (const std::string& op : case_ops())
    if (!plans_for(m, op, nullptr).empty()) ops.push_back(op);
  return ops;
}

}  // namespace

CompareRun prepare_run(const CompareOptions& opt, const vk::DeviceInfo& info) {
  CompareRun run;
  run.manifest = load_kernels(opt.kernels, opt.kernels_root);
  const Manifest& m = run.manifest;
  const std::vector<std::string> with_cases = case_ops();
  const std::set<std::string> known(with_cases.begin(), with_cases.end());
  run.ops = opt.ops.empty() ? default_ops(m) : split_commas(opt.ops);
  MOE_CHECK(!run.ops.empty(), "compare: the manifest " << (m.path.empty() ? "(bundled)" : m.path)
                                                        << " has no kernel for any op with comparison cases");
  parse_shard(opt);
  for (const std::string& op : run.ops) {
    if (!known.count(op)) {
      std::string list;
      for (const std::string& o : with_cases) list += (list.empty() ? "" : ", ") + o;
      MOE_FAIL("compare: no comparison cases for op '" << op << "' (ops with cases: " << list << ")");
    }
    std::string why;
    run.plans[op] = plans_for(m, op, &why);
    MOE_CHECK(!run.plans[op].empty(), "compare: the manifest " << (m.path.empty() ? "(bundled)" : m.path) << " has "
                                                               << why);
  }
  // Sizes per plan; a plan the device cannot run at any size is reported once as skipped.
  for (const std::string& op : run.ops)
    for (size_t p = 0; p < run.plans[op].size(); ++p) {
      const Plan& plan = run.plans[op][p];
      std::vector<uint32_t> sizes = plan_subgroup_sizes(plan, info, opt.subgroup);
      if (!sizes.empty()) {
        run.work.push_back({op, {p, &plan, sizes}});
        continue;
      }
      CaseResult r;
      r.op = op, r.kernel = plan.label, r.manifest = m.path, r.skipped = true, r.plan_index = int(p);
      r.skip_reason = "the device offers none of the subgroup sizes the kernel(s) accept";
      run.unrunnable.push_back(r);
    }
  return run;
}

void print_header(const CompareOptions& opt, const vk::DeviceInfo& info, const Manifest& m) {
  if (opt.quiet) return;
  std::printf("device %d: %s (%s), subgroup sizes", info.index, info.name.c_str(), info.driver.c_str());
  for (uint32_t s : info.subgroup_sizes()) std::printf(" %u", s);
  std::printf("; kernels: %s\n", m.path.empty() ? "bundled" : m.path.c_str());
  if (!opt.precision_note.empty()) std::printf("%s\n", opt.precision_note.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace moe::compare
