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

void add_device_vars(ExprVars& v, const vk::DeviceInfo& d, uint32_t subgroup) {
  v["subgroup_size"] = subgroup ? subgroup : d.subgroup_size;
  v["max_shared_memory"] = d.max_shared_memory;
  v["max_workgroup_invocations"] = d.max_workgroup_invocations;
  // Subgroups a workgroup may hold at the pinned size (without size control: no extra limit).
  v["max_workgroup_subgroups"] = d.max_workgroup_subgroups ? d.max_workgroup_subgroups : d.max_workgroup_invocations;
  v["max_workgroup_count_x"] = d.max_workgroup_count[0];
  v["max_workgroup_count_y"] = d.max_workgroup_count[1];
  v["max_workgroup_count_z"] = d.max_workgroup_count[2];
  v["max_storage_buffer_range"] = double(d.max_storage_buffer_range);
}

std::string case_tensor(const ChainStage* st, const std::string& kernel_tensor) {
  if (!st) return kernel_tensor;
  auto it = st->tensors.find(kernel_tensor);
  return it == st->tensors.end() ? kernel_tensor : it->second;
}

ExprVars stage_vars(const ChainStage* st, const ExprVars& vars) {
  if (!st) return vars;
  ExprVars out = vars;
  for (const auto& [name, expr] : st->vars) out[name] = eval_expr(expr, vars);
  return out;
}

std::string step_name(const std::string& output, const OpCase& c, size_t step) {
  if (c.steps.empty()) return output;
  return output + "@" + (c.steps[step].label.empty() ? "step" + std::to_string(step) : c.steps[step].label);
}

Verdict decide_output(const OutputSpec& spec, const HostTensor& t, const std::vector<double>& truth,
                      const std::vector<uint32_t>& got) {
  if (spec.kind == Kind::Indices) {
    MOE_CHECK(t.type == ElemType::I32 || t.type == ElemType::U32,
              "output '" << spec.name << "' is decided as indices but its tensor is not i32/u32");
    std::vector<int32_t> want(truth.size()), found(got.size());
    for (size_t i = 0; i < truth.size(); ++i) want[i] = int32_t(truth[i]);
    for (size_t i = 0; i < got.size(); ++i) found[i] = std::bit_cast<int32_t>(got[i]);
    return decide_indices(spec, want, found, spec.scores, spec.score_bound);
  }
  if (t.type == ElemType::U32 || t.type == ElemType::I32) {
    MOE_CHECK(spec.kind == Kind::Exact, "output '" << spec.name << "' is an integer tensor: decide it exactly");
    std::vector<uint32_t> want(truth.size());
    for (size_t i = 0; i < truth.size(); ++i)
      want[i] = t.type == ElemType::I32 ? std::bit_cast<uint32_t>(int32_t(truth[i])) : uint32_t(truth[i]);
    return decide_bits(spec, want, got);
  }
  std::vector<float> found(got.size());
  std::memcpy(found.data(), got.data(), got.size() * 4);
  return decide(spec, truth, found, kPoison);
}

// Routing weights belong to experts: where the kernel chose the truth's expert set for a row,
// each found (expert, weight) pair must match the truth's weight OF THAT EXPERT within that
// slot's bound, so weights written in another slot order than their experts fail (the weights
// alone, compared as sorted order statistics, cannot see that). Rows whose set differs on a
// near-tie were judged by the index rule and the order statistics; they are not re-checked.
void check_pairing(Verdict& v, const OutputSpec& spec, const std::vector<double>& truth_w,
                   const std::vector<uint32_t>& found_w, const std::vector<double>& truth_i,
                   const std::vector<uint32_t>& found_i) {
  if (truth_w.size() != truth_i.size() || found_w.size() != truth_w.size() || found_i.size() != truth_i.size()) return;
  const size_t n = truth_w.size();
  MOE_CHECK(spec.row > 0 && n % size_t(spec.row) == 0,
            "output '" << spec.name << "' is paired with indices but its row length (" << spec.row << ") does not divide "
                       << n);
  const size_t K = size_t(spec.row);
  for (size_t r0 = 0; r0 < n; r0 += K) {
    std::vector<int32_t> a(K), b(K);
    for (size_t j = 0; j < K; ++j) a[j] = int32_t(truth_i[r0 + j]), b[j] = std::bit_cast<int32_t>(found_i[r0 + j]);
    std::vector<int32_t> sa = a, sb = b;
    std::sort(sa.begin(), sa.end()), std::sort(sb.begin(), sb.end());
    if (sa != sb) continue;
    for (size_t j = 0; j < K; ++j) {
      const size_t k = size_t(std::find(a.begin(), a.end(), b[j]) - a.begin());
      const float w = std::bit_cast<float>(found_w[r0 + j]);
      const double t = truth_w[r0 + k];
      const double bound = spec.bound.empty() ? 0.0 : spec.bound.size() == 1 ? spec.bound[0] : spec.bound[r0 + k];
      if (std::isnan(t) && std::isnan(w)) continue;
      if (!(std::fabs(double(w) - t) <= bound)) {
        if (v.pass) {
          std::ostringstream os;
          os << "row " << r0 / K << " slot " << j << ": expert " << b[j] << " has weight " << w
             << ", the truth gives that expert " << t << " (bound " << bound
             << "): weights are not paired with their experts";
          v.reason = os.str() + (v.reason.empty() ? "" : "; " + v.reason);
          v.worst_index = int64_t(r0 + j), v.expected = t, v.found = w;
        }
        v.pass = false, v.warn = false, v.failed |= kElement, ++v.over_budget;
      }
    }
  }
}

// Runs one case through a plan at one subgroup size: buffers by case tensor name, kept across
// the case's steps; per step uploads, poison, the dispatch sequence, guards, untouched inputs,
// then the step's outputs.
}  // namespace

CaseResult run_plan_case(vk::Context& ctx, const Manifest& m, const Plan& plan, const OpCase& c, uint32_t subgroup,
                         uint64_t timeout_ms, std::map<std::string, std::vector<uint32_t>>* downloads,
                         int timing_repeats) {
  CaseResult r;
  r.op = c.op, r.kernel = plan.label, r.manifest = m.path, r.params = c.params, r.shape = c.shape, r.seed = c.seed;
  r.subgroup = subgroup, r.flops = c.flops;
  const size_t nsteps = std::max<size_t>(1, c.steps.size());

  // Per position the kernel that runs: the first alternative that accepts the pinned subgroup
  // size and whose limits hold at every step (a chain stage may have several kernels, e.g.
  // matmul_q at 4 and 8 bits); none: the case is skipped with every alternative's reason.
  std::vector<ExprVars> step_vars(nsteps);
  for (size_t s = 0; s < nsteps; ++s) {
    step_vars[s] = c.vars;
    if (!c.steps.empty())
      for (const auto& [k, v] : c.steps[s].vars) step_vars[s][k] = v;
    add_device_vars(step_vars[s], ctx.info(), subgroup);
  }
  const std::string where = m.path.empty() ? "bundled" : m.path;
  std::vector<const KernelEntry*> kernels;
  std::vector<std::vector<KernelInstance>> inst(nsteps);
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const std::vector<const KernelEntry*> alts =
        i < plan.alternatives.size() && !plan.alternatives[i].empty() ? plan.alternatives[i]
                                                                      : std::vector<const KernelEntry*>{plan.kernels[i]};
    std::string reasons;
    const KernelEntry* pick = nullptr;
    std::vector<KernelInstance> picked;
    for (const KernelEntry* k : alts) {
      if (subgroup && !k->subgroup_sizes.empty() &&
          !std::count(k->subgroup_sizes.begin(), k->subgroup_sizes.end(), subgroup)) {
        reasons += (reasons.empty() ? "" : "; ") + ("'" + k->name + "' does not run at subgroup size " +
                                                    std::to_string(subgroup));
        continue;
      }
      std::vector<KernelInstance> per_step;
      std::string why;
      for (size_t s = 0; s < nsteps && why.empty(); ++s) {
        KernelInstance ki = instantiate(*k, stage_vars(plan.stages[i], step_vars[s]), where);
        if (!ki.skipped.empty()) why = ki.skipped;
        per_step.push_back(std::move(ki));
      }
      if (!why.empty()) {
        reasons += (reasons.empty() ? "" : "; ") + ("'" + k->name + "': " + why);
        continue;
      }
      pick = k, picked = std::move(per_step);
      break;
    }
    if (!pick) {
      r.skipped = true;
      r.skip_reason = "outside the declared limits of " + reasons;
      return r;
    }
    kernels.push_back(pick);
    for (size_t s = 0; s < nsteps; ++s) inst[s].push_back(std::move(picked[s]));
  }
  if (kernels.size() > 1) {
    r.kernel.clear();
    for (const KernelEntry* k : kernels) r.kernel += (r.kernel.empty() ? "" : " -> ") + k->name;
  }

  // Buffers, one per case tensor any kernel binds; which of them some kernel writes.
  std::map<std::string, vk::Buffer> buffers;
  std::set<std::string> written;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelEntry& k = *kernels[i];
    for (const ManifestBinding& b : k.bindings) {
      const std::string name = case_tensor(plan.stages[i], b.tensor);
      auto it = c.tensors.find(name);
      if (it == c.tensors.end()) {
        std::string have;
        for (const auto& [n, t] : c.tensors) have += (have.empty() ? "" : ", ") + n;
        MOE_FAIL("kernel '" << k.name << "' binding " << b.binding << " names tensor '" << b.tensor
                            << (name != b.tensor ? "' ('" + name + "' in op " + c.op + ")" : "'") << "; op '" << c.op
                            << "' has: " << have);
      }
      const HostTensor& t = it->second;
      MOE_CHECK(t.type == b.type, "kernel '" << k.name << "' binding " << b.binding << " ('" << b.tensor
                                             << "') declares another element type than the op's tensor '" << name
                                             << "'");
      if (b.access != Access::In) written.insert(name);
      if (buffers.count(name)) continue;
      const size_t bytes = t.words.size() * 4;
      if (bytes > ctx.info().max_storage_buffer_range) {
        r.skipped = true;
        r.skip_reason = "tensor '" + name + "' needs " + std::to_string(bytes) +
                        " bytes, the device's storage buffers hold " +
                        std::to_string(ctx.info().max_storage_buffer_range);
        return r;
      }
      buffers.emplace(name, ctx.make_buffer(std::max<size_t>(bytes, 4)));
    }
  }
  for (const auto& [name, buf] : buffers) r.system_memory = r.system_memory || !buf.device_local();
  // The words each unwritten tensor must still hold after a step (its last upload).
  std::map<std::string, const std::vector<uint32_t>*> expect_in;
  r.gpu_ms = 0;
  std::vector<vk::Dispatch> timed;  // the last step's sequence, for timing_repeats
  for (size_t s = 0; s < nsteps; ++s) {
    const CaseStep* step = c.steps.empty() ? nullptr : &c.steps[s];
    for (auto& [name, buf] : buffers) {
      const HostTensor* up = nullptr;
      if (step && step->upload.count(name))
        up = &step->upload.at(name);
      else if (s == 0 && !c.tensors.at(name).output)
        up = &c.tensors.at(name);
      if (up) {
        MOE_CHECK(up->words.size() == c.tensors.at(name).words.size(),
                  "op '" << c.op << "' step " << s << " uploads " << up->words.size() << " words to tensor '" << name
                         << "' of " << c.tensors.at(name).words.size());
        buf.upload(up->words.data(), up->words.size() * 4);
        expect_in[name] = &up->words;
        r.bytes += double(up->words.size() * 4);
      } else if (c.tensors.at(name).output) {
        buf.fill_u32(kPoison);
      }
    }
    std::vector<vk::Dispatch> seq;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const KernelEntry& k = *kernels[i];
      const KernelInstance& ki = inst[s][i];
      vk::Dispatch d;
      d.label = k.name, d.spirv = k.spirv, d.entry = k.entry, d.required_subgroup_size = subgroup;
      for (const ManifestBinding& b : k.bindings)
        d.bindings.push_back({b.binding, &buffers.at(case_tensor(plan.stages[i], b.tensor)), 0, 0});
      d.push_constants = ki.push_constants;
      for (const auto& [id, bits] : ki.spec_constants) d.spec_constants.push_back({id, bits});
      for (int g = 0; g < 3; ++g) d.groups[g] = ki.groups[g];
      seq.push_back(std::move(d));
    }
    try {
      const vk::RunResult rr = ctx.run(seq, timeout_ms);
      for (double ms : rr.gpu_ms) r.gpu_ms += ms;
      if (rr.gpu_ms.empty()) r.gpu_ms = -1;
      if (timing_repeats > 0) timed = seq;
    } catch (const Error& e) {
      r.error = (nsteps > 1 ? "step " + std::to_string(s) + ": " : "") + e.what();
      return r;
    }
    for (auto& [name, buf] : buffers) {
      if (!buf.guard_intact()) {
        r.error = "tensor '" + name + "' was written past its end (guard region changed)" +
                  (nsteps > 1 ? " at step " + std::to_string(s) : "");
        return r;
      }
      if (written.count(name) || !expect_in.count(name)) continue;
      std::vector<uint32_t> got(expect_in[name]->size());
      buf.download(got.data(), got.size() * 4);
      if (got != *expect_in[name]) {
        r.error = "tensor '" + name + "' is an input of every kernel but was changed";
        return r;
      }
    }
    const auto& outputs = step ? step->outputs : c.outputs;
    const auto& truth = step ? step->truth : c.truth;
    std::map<std::string, std::vector<uint32_t>> found;
    for (const auto& [name, spec] : outputs) {
      auto b = buffers.find(name);
      if (b == buffers.end()) {
        r.error = "output '" + name + "' of op '" + c.op + "' is bound by no kernel of '" + plan.label + "'";
        return r;
      }
      std::vector<uint32_t>& got = found[name];
      got.resize(c.tensors.at(name).words.size());
      b->second.download(got.data(), got.size() * 4);
      r.bytes += double(got.size() * 4);
    }
    for (const auto& [name, spec] : outputs) {
      Verdict v = decide_output(spec, c.tensors.at(name), truth.at(name), found.at(name));
      if (!spec.paired_with.empty()) {
        MOE_CHECK(outputs.count(spec.paired_with), "op '" << c.op << "': output '" << name << "' is paired with '"
                                                          << spec.paired_with << "', which is not compared");
        check_pairing(v, spec, truth.at(name), found.at(name), truth.at(spec.paired_with),
                      found.at(spec.paired_with));
      }
      v.output = step_name(name, c, s);
      r.outputs.push_back(std::move(v));
    }
  }
  if (downloads)
    for (auto& [name, buf] : buffers) {
      std::vector<uint32_t>& got = (*downloads)[name];
      got.resize(c.tensors.at(name).words.size());
      buf.download(got.data(), got.size() * 4);
    }
  // --perf: the dispatches again, back to back, after everything was decided (a kernel updating
  // state in place advances it; nothing is compared any more): one run is one sample, and the
  // first run of a pipeline may include the driver's lazy work. Multi-step cases keep the sum of
  // their steps' single runs.
  if (timing_repeats > 0 && nsteps == 1 && r.gpu_ms > 0 && r.error.empty()) {
    std::vector<double> times;
    const auto stop = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    try {
      while (int(times.size()) < timing_repeats && (times.size() < 4 || std::chrono::steady_clock::now() < stop)) {
        double ms = 0;
        for (double t : ctx.run(timed, timeout_ms).gpu_ms) ms += t;
        times.push_back(ms);
      }
    } catch (const Error& e) {
      r.error = std::string("timing repeat: ") + e.what();
      return r;
    }
    std::sort(times.begin(), times.end());
    r.gpu_ms = times[times.size() / 2];
  }
  return r;
}

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
