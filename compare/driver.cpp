#include "compare/driver.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "compare/bundled.h"
#include "compare/cases.h"
#include "compare/manifest.h"
#include "compare/metrics.h"
#include "compare/report.h"
#include "compare/vk/runner.h"
#include "core/check.h"

namespace moe::compare {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The bundled manifest goes through the same loader and reflection checks as any engine's: its
// JSON and SPIR-V are written to a private folder and loaded from there.
Manifest load_bundled() {
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
  v["max_workgroup_count_x"] = d.max_workgroup_count[0];
  v["max_workgroup_count_y"] = d.max_workgroup_count[1];
  v["max_workgroup_count_z"] = d.max_workgroup_count[2];
  v["max_storage_buffer_range"] = double(d.max_storage_buffer_range);
}

uint32_t as_u32(double v, const std::string& what) {
  MOE_CHECK(v >= 0 && v <= 4294967295.0 && v == std::floor(v),
            what << " = " << v << ", expected an integer in [0, 2^32)");
  return uint32_t(v);
}

// Runs one case on one kernel at one subgroup size.
CaseResult run_case(vk::Context& ctx, const Manifest& m, const KernelEntry& k, const OpCase& c, uint32_t subgroup,
                    uint64_t timeout_ms) {
  CaseResult r;
  r.op = c.op, r.kernel = k.name, r.manifest = m.path, r.params = c.params, r.shape = c.shape, r.seed = c.seed;
  r.subgroup = subgroup;
  ExprVars vars = c.vars;
  add_device_vars(vars, ctx.info(), subgroup);
  for (const std::string& lim : k.limits) {
    std::string why;
    if (!eval_limit(lim, vars, &why)) {
      r.skipped = true, r.skip_reason = "outside the kernel's declared limits: " + why;
      return r;
    }
  }
  // Buffers, bound by tensor name.
  std::vector<vk::Buffer> buffers;
  buffers.reserve(k.bindings.size());
  vk::Dispatch d;
  d.label = k.name;
  d.spirv = k.spirv;
  d.entry = k.entry;
  d.required_subgroup_size = subgroup;
  for (const ManifestBinding& b : k.bindings) {
    auto it = c.tensors.find(b.tensor);
    if (it == c.tensors.end()) {
      std::string have;
      for (const auto& [n, t] : c.tensors) have += (have.empty() ? "" : ", ") + n;
      MOE_FAIL("kernel '" << k.name << "' binding " << b.binding << " names tensor '" << b.tensor << "'; op '" << c.op
                          << "' has: " << have);
    }
    const HostTensor& t = it->second;
    MOE_CHECK(t.type == b.type, "kernel '" << k.name << "' binding " << b.binding << " ('" << b.tensor
                                           << "') declares another element type than the op's tensor");
    const size_t bytes = t.words.size() * 4;
    if (bytes > ctx.info().max_storage_buffer_range) {
      r.skipped = true;
      r.skip_reason = "tensor '" + b.tensor + "' needs " + std::to_string(bytes) +
                      " bytes, the device's storage buffers hold " +
                      std::to_string(ctx.info().max_storage_buffer_range);
      return r;
    }
    buffers.push_back(ctx.make_buffer(std::max<size_t>(bytes, 4)));
    if (b.access == Access::Out)
      buffers.back().fill_u32(kPoison);
    else
      buffers.back().upload(t.words.data(), bytes);
    r.bytes += double(bytes);
  }
  for (size_t i = 0; i < k.bindings.size(); ++i) d.bindings.push_back({k.bindings[i].binding, &buffers[i], 0, 0});
  d.push_constants.assign(k.push_constant_size, 0);
  for (const PushConstant& pc : k.push_constants) {
    const double v = eval_expr(pc.value, vars);
    uint32_t bits = 0;
    if (pc.type == "f32")
      bits = std::bit_cast<uint32_t>(float(v));
    else if (pc.type == "i32")
      bits = std::bit_cast<uint32_t>(int32_t(v));
    else
      bits = as_u32(v, k.name + " push constant " + pc.name);
    MOE_CHECK(pc.offset + 4 <= d.push_constants.size(), "kernel '" << k.name << "' push constant " << pc.name
                                                                   << " at offset " << pc.offset
                                                                   << " is past the block");
    std::memcpy(d.push_constants.data() + pc.offset, &bits, 4);
  }
  for (const SpecEntry& s : k.specialization)
    d.spec_constants.push_back(
        {s.id, as_u32(eval_expr(s.value, vars), k.name + " spec constant " + std::to_string(s.id))});
  for (int i = 0; i < 3; ++i) d.groups[i] = as_u32(eval_expr(k.dispatch[i], vars), k.name + " dispatch");

  try {
    const vk::RunResult rr = ctx.run({d}, timeout_ms);
    if (!rr.gpu_ms.empty()) r.gpu_ms = rr.gpu_ms[0];
  } catch (const Error& e) {
    r.error = e.what();
    return r;
  }
  for (size_t i = 0; i < k.bindings.size(); ++i) {
    const ManifestBinding& b = k.bindings[i];
    if (!buffers[i].guard_intact()) {
      r.error = "binding " + std::to_string(b.binding) + " ('" + b.tensor +
                "') was written past its end (guard region changed)";
      return r;
    }
    const HostTensor& t = c.tensors.at(b.tensor);
    std::vector<uint32_t> got(t.words.size());
    buffers[i].download(got.data(), got.size() * 4);
    if (b.access == Access::In && got != t.words) {
      r.error = "binding " + std::to_string(b.binding) + " ('" + b.tensor + "') is an input but the kernel changed it";
      return r;
    }
    if (b.access == Access::In) continue;
    const auto spec = c.outputs.find(b.tensor);
    if (spec == c.outputs.end()) continue;
    std::vector<float> found(got.size());
    std::memcpy(found.data(), got.data(), got.size() * 4);
    Verdict v = decide(spec->second, c.truth.at(b.tensor), found, kPoison);
    r.outputs.push_back(v);
  }
  return r;
}

}  // namespace

std::vector<CaseResult> compare_cases(const CompareOptions& opt) {
  vk::Context ctx(opt.device);
  const Manifest m = opt.kernels.empty() ? load_bundled() : load_manifest(opt.kernels);
  const std::vector<std::string> with_cases = case_ops();
  const std::set<std::string> known(with_cases.begin(), with_cases.end());
  std::vector<std::string> ops = split(opt.ops);
  if (ops.empty())
    for (const KernelEntry& k : m.kernels)
      if (k.ops.size() == 1 && std::find(ops.begin(), ops.end(), k.ops[0]) == ops.end()) ops.push_back(k.ops[0]);
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
    // Every kernel of the op (several kernels of one op split it by limits, e.g. matvec_q at 2, 4
    // and 8 bits, or an engine's variants): each runs every case, skipping those outside its limits.
    std::vector<const KernelEntry*> kernels;
    for (const KernelEntry& e : m.kernels)
      if (e.ops.size() == 1 && e.ops[0] == op) kernels.push_back(&e);
    MOE_CHECK(!kernels.empty(), "compare: the manifest has no kernel for op '" << op << "'");
    for (const KernelEntry* k : kernels) {
      if (!known.count(op)) {
        CaseResult r;
        r.op = op, r.kernel = k->name, r.manifest = m.path, r.skipped = true;
        r.skip_reason = "no comparison cases for this op yet";
        results.push_back(r);
        continue;
      }
      std::vector<uint32_t> sizes = info.subgroup_sizes();
      if (!k->subgroup_sizes.empty()) {
        std::vector<uint32_t> both;
        for (uint32_t s : sizes)
          if (std::find(k->subgroup_sizes.begin(), k->subgroup_sizes.end(), s) != k->subgroup_sizes.end())
            both.push_back(s);
        sizes = both;
      }
      if (opt.subgroup) sizes = {opt.subgroup};
      if (!info.subgroup_size_control && sizes.size() == 1 && !opt.subgroup) sizes = {0};  // the driver's own size
      for (int s = 0; s < opt.seeds; ++s) {
        const bool named_shape = opt.shapes != "all" && opt.shapes != "real" && opt.shapes != "remainders";
        for (const OpCase& c : make_cases(op, named_shape ? "all" : opt.shapes, opt.seed + uint64_t(s))) {
          if (named_shape && c.shape != opt.shapes) continue;
          for (uint32_t sg : sizes) {
            if (index++ % shard_n != shard_i) continue;
            results.push_back(run_case(ctx, m, *k, c, sg, opt.timeout_ms));
            if (opt.perf && results.back().gpu_ms > 0)
              std::printf("perf %s [%s] sg=%u: %.3f ms, %.2f GB/s\n", op.c_str(), c.shape.c_str(), sg,
                          results.back().gpu_ms, results.back().bytes / (results.back().gpu_ms * 1e6));
          }
        }
      }
    }
  }
  return results;
}

int run_compare(const CompareOptions& opt) {
  const std::vector<CaseResult> results = compare_cases(opt);
  write_console(std::cout, results);
  if (!opt.json.empty()) save_report(opt.json, ReportFormat::Json, results);
  if (!opt.junit.empty()) save_report(opt.junit, ReportFormat::Junit, results);
  return summarize(results).failed > 0 ? 1 : 0;
}

}  // namespace moe::compare
