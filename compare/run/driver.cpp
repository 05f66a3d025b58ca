#include "compare/run/driver.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

#include "compare/shaders/bundled.h"
#include "compare/run/case_file.h"
#include "compare/cases/cases.h"
#include "compare/run/chains.h"
#include "compare/manifest/manifest.h"
#include "compare/decide/metrics.h"
#include "compare/report/report.h"
#include "compare/vk/runner.h"
#include "core/check.h"

namespace moe::compare {
namespace fs = std::filesystem;

namespace {

// --perf: runs of a one-step case timed back to back (at least 4, at most 30, stopping after
// 100 ms); its gpu_ms is their median.
constexpr int kTimingRepeats = 30;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The bundled manifest goes through the same loader and reflection checks as any engine's: its
// JSON and SPIR-V are written to a private folder and loaded from there.
Manifest load_bundled_manifest() {
  const fs::path dir = fs::temp_directory_path() / ("moeoracle_bundled_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& [name, bytes] : bundled_files()) {
    std::ofstream f(dir / name, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  std::ofstream(dir / "bundled.json") << bundled_manifest_json();
  Manifest m;
  try {
    m = load_manifest((dir / "bundled.json").string());
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  m.path = "";
  return m;
}

}  // namespace

std::vector<Plan> plans_for(const Manifest& m, const std::string& op, std::string* why_none) {
  std::vector<Plan> plans;
  for (const KernelEntry& k : m.kernels) {
    bool match = k.ops.size() == 1 && k.ops[0] == op;
    if (!match && k.ops.size() > 1)
      if (const Chain* ch = find_chain(op); ch && ch->stages.size() == k.ops.size()) {
        match = true;
        for (size_t i = 0; i < k.ops.size(); ++i) match = match && k.ops[i] == ch->stages[i].op;
      }
    if (match) plans.push_back({op, k.name, {&k}, {nullptr}, k.subgroup_sizes, {}});
  }
  if (const Chain* ch = find_chain(op)) {
    Plan p{op, "", {}, {}, {}, {}};
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

Manifest load_kernels(const std::string& path) {
  return path.empty() || path == "bundled" ? load_bundled_manifest() : load_manifest(path);
}

std::vector<uint32_t> plan_subgroup_sizes(const Plan& plan, const vk::Context& ctx, uint32_t only) {
  const vk::DeviceInfo& info = ctx.info();
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

namespace {

// --case FILE: the saved case alone, on the plan that ran it (by label) when the manifest still
// has it, else on every plan of its op; at every subgroup size.
std::vector<CaseResult> replay_case(vk::Context& ctx, const CompareOptions& opt) {
  const CaseFile f = load_case_file(opt.case_file);
  const Manifest m = load_kernels(opt.kernels.empty() ? f.manifest : opt.kernels);
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
    for (uint32_t sg : plan_subgroup_sizes(plan, ctx, opt.subgroup)) {
      results.push_back(run_plan_case(ctx, m, plan, f.c, sg, opt.timeout_ms, nullptr, opt.perf ? kTimingRepeats : 0));
      results.back().case_file = opt.case_file;
    }
  return results;
}

}  // namespace

std::vector<CaseResult> compare_cases(const CompareOptions& opt) {
  // --perf times kernels reading device-local memory; otherwise fast host read-back.
  vk::Context ctx(opt.device, opt.perf ? vk::Context::Memory::DeviceSpeed : vk::Context::Memory::Readback);
  if (!opt.case_file.empty()) return replay_case(ctx, opt);
  const Manifest m = load_kernels(opt.kernels);
  const std::vector<std::string> with_cases = case_ops();
  const std::set<std::string> known(with_cases.begin(), with_cases.end());
  std::vector<std::string> ops = opt.ops.empty() ? default_ops(m) : split(opt.ops);
  MOE_CHECK(!ops.empty(), "compare: the manifest " << (m.path.empty() ? "(bundled)" : m.path)
                                                    << " has no kernel for any op with comparison cases");
  int64_t shard_i = 0, shard_n = 1;
  std::string shard = opt.shard;
  if (shard.empty() && std::getenv("GTEST_TOTAL_SHARDS") && std::getenv("GTEST_SHARD_INDEX"))
    shard = std::string(std::getenv("GTEST_SHARD_INDEX")) + "/" + std::getenv("GTEST_TOTAL_SHARDS");
  if (!shard.empty()) {
    MOE_CHECK(std::sscanf(shard.c_str(), "%ld/%ld", &shard_i, &shard_n) == 2 && shard_n > 0 && shard_i >= 0 &&
                  shard_i < shard_n,
              "compare: --shard '" << shard << "', expected I/N with 0 <= I < N");
  }
  const vk::DeviceInfo& info = ctx.info();
  if (!opt.quiet) {
    std::printf("device %d: %s (%s), subgroup sizes", info.index, info.name.c_str(), info.driver.c_str());
    for (uint32_t s : info.subgroup_sizes()) std::printf(" %u", s);
    std::printf("; kernels: %s\n\n", m.path.empty() ? "bundled" : m.path.c_str());
  }

  std::vector<CaseResult> results;
  int64_t index = 0;
  for (const std::string& op : ops) {
    if (!known.count(op)) {
      std::string list;
      for (const std::string& o : with_cases) list += (list.empty() ? "" : ", ") + o;
      MOE_FAIL("compare: no comparison cases for op '" << op << "' (ops with cases: " << list << ")");
    }
    std::string why;
    const std::vector<Plan> plans = plans_for(m, op, &why);
    MOE_CHECK(!plans.empty(), "compare: the manifest " << (m.path.empty() ? "(bundled)" : m.path) << " has " << why);
    // Sizes per plan; a plan the device cannot run at any size is reported once as skipped.
    std::vector<std::vector<uint32_t>> sizes;
    for (const Plan& plan : plans) {
      sizes.push_back(plan_subgroup_sizes(plan, ctx, opt.subgroup));
      if (sizes.back().empty()) {
        CaseResult r;
        r.op = op, r.kernel = plan.label, r.manifest = m.path, r.skipped = true;
        r.skip_reason = "the device offers none of the subgroup sizes the kernel(s) accept";
        results.push_back(r);
      }
    }
    // Cases are built once per seed (the f64 truth of big stateful cases is the costly part)
    // and run on every plan.
    // Sharding: by seed when there are at least as many seeds as shards (each shard then builds
    // only its own seeds' cases), else by case index. Either way disjoint and complete.
    const bool named_shape = opt.shapes != "all" && opt.shapes != "real" && opt.shapes != "remainders";
    const bool by_seed = shard_n > 1 && opt.seeds >= shard_n;
    for (int s = 0; s < opt.seeds; ++s) {
      if (by_seed && s % shard_n != shard_i) continue;
      const std::vector<OpCase> cases = make_cases(op, named_shape ? "all" : opt.shapes, opt.seed + uint64_t(s));
      for (const OpCase& c : cases) {
        if (named_shape && c.shape != opt.shapes) continue;
        // Every plan runs the case; a case that some plan ran is not reported as skipped by the
        // others (an op split over kernels by limits, matmul_q4/matmul_q8); a case that no plan
        // accepts is one SKIP line with every plan's reason.
        std::vector<CaseResult> group;
        for (size_t p = 0; p < plans.size(); ++p)
          for (uint32_t sg : sizes[p]) {
            if (!by_seed && index++ % shard_n != shard_i) continue;
            group.push_back(run_plan_case(ctx, m, plans[p], c, sg, opt.timeout_ms, nullptr,
                                          opt.perf ? kTimingRepeats : 0));
          }
        if (group.empty()) continue;
        const bool ran = std::any_of(group.begin(), group.end(), [](const CaseResult& r) { return !r.skipped; });
        if (ran) {
          for (CaseResult& r : group)
            if (!r.skipped) results.push_back(std::move(r));
        } else {
          CaseResult merged = group.front();
          if (group.size() > 1) {
            merged.kernel.clear(), merged.skip_reason = "no kernel accepts the case:";
            std::set<std::string> seen;
            for (const CaseResult& r : group)
              if (seen.insert(r.kernel).second) {
                merged.kernel += (merged.kernel.empty() ? "" : ", ") + r.kernel;
                merged.skip_reason += " " + r.skip_reason + ";";
              }
            merged.skip_reason.pop_back();
          }
          results.push_back(std::move(merged));
        }
      }
    }
  }
  return results;
}

namespace {

// The device's copy bandwidth, measured the way kernels see memory: a compute kernel copying
// uvec4s between two buffers of the runner (the same memory type kernels read), best of 5.
double copy_bandwidth_gbs(vk::Context& ctx) {
  const char* src = R"(#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer A { uvec4 a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer B { uvec4 b[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
  for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += gl_NumWorkGroups.x * 256u) b[i] = a[i];
}
)";
  KernelEntry k;
  k.name = "copy_bandwidth";
  const std::vector<uint32_t> spirv = compile_glsl(src, "copy_bandwidth.comp", k);
  size_t bytes = size_t(256) << 20;
  bytes = std::min<size_t>(bytes, size_t(ctx.info().max_storage_buffer_range) / 2);
  bytes &= ~size_t(15);
  vk::Buffer a = ctx.make_buffer(bytes), b = ctx.make_buffer(bytes);
  a.fill_u32(1u);
  const uint32_t n = uint32_t(bytes / 16);
  vk::Dispatch d;
  d.label = "copy_bandwidth", d.spirv = spirv;
  d.bindings = {{0, &a, 0, bytes}, {1, &b, 0, bytes}};
  d.push_constants.resize(4);
  std::memcpy(d.push_constants.data(), &n, 4);
  d.groups[0] = std::min<uint32_t>((n + 255) / 256, 65535u);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    const vk::RunResult rr = ctx.run({d}, 60000);
    if (rr.gpu_ms.empty() || rr.gpu_ms[0] <= 0) return 0;
    best = std::max(best, 2.0 * double(bytes) / (rr.gpu_ms[0] * 1e6));
  }
  return best;
}

}  // namespace

int run_compare(const CompareOptions& opt) {
  const std::vector<CaseResult> results = compare_cases(opt);
  write_console(std::cout, results);
  if (opt.perf) {
    vk::Context ctx(opt.device, vk::Context::Memory::DeviceSpeed);
    const double copy = copy_bandwidth_gbs(ctx);
    write_perf(std::cout, results, copy);
  }
  if (!opt.json.empty()) save_report(opt.json, ReportFormat::Json, results);
  if (!opt.junit.empty()) save_report(opt.junit, ReportFormat::Junit, results);
  if (!opt.html.empty()) save_report(opt.html, ReportFormat::Html, results);
  return summarize(results).failed > 0 ? 1 : 0;
}

}  // namespace moe::compare
