#include "compare/report/result_codec.h"

#include <cmath>
#include <limits>

#include "core/check.h"

namespace moe::compare {
namespace {

using nlohmann::json;

// JSON has no NaN or infinity: those travel as strings; finite doubles as numbers (nlohmann
// writes 17 significant digits, so they read back bit-exactly).
json num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double get_num(const json& j, const char* key) {
  MOE_CHECK(j.contains(key), "worker result: missing field '" << key << "'");
  const json& v = j.at(key);
  if (v.is_number()) return v.get<double>();
  MOE_CHECK(v.is_string(), "worker result: field '" << key << "' is not a number");
  const std::string s = v.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  MOE_CHECK(s == "-inf", "worker result: field '" << key << "' is '" << s << "'");
  return -std::numeric_limits<double>::infinity();
}

template <class T>
T get(const json& j, const char* key) {
  MOE_CHECK(j.contains(key), "worker result: missing field '" << key << "'");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    MOE_FAIL("worker result: field '" << key << "': " << e.what());
  }
}

json verdict_to_json(const Verdict& v) {
  return {{"output", v.output},       {"kind", int(v.kind)},
          {"pass", v.pass},           {"warn", v.warn},
          {"failed", v.failed},       {"reason", v.reason},
          {"worst_index", v.worst_index}, {"expected", num(v.expected)},
          {"found", num(v.found)},    {"bound", num(v.bound)},
          {"budget_used", num(v.budget_used)}, {"compared", v.compared},
          {"over_budget", v.over_budget}, {"cosine", num(v.cosine)},
          {"cosine_min", num(v.cosine_min)}, {"norm_ratio", num(v.norm_ratio)},
          {"norm_ratio_tol", num(v.norm_ratio_tol)}, {"max_abs_rel", num(v.max_abs_rel)},
          {"max_abs_rel_limit", num(v.max_abs_rel_limit)}, {"max_ulp", num(v.max_ulp)},
          {"nan_found", v.nan_found}, {"nan_missing", v.nan_missing},
          {"inf_mismatch", v.inf_mismatch}, {"unwritten", v.unwritten},
          {"near_ties", v.near_ties}};
}

Verdict verdict_from_json(const json& j) {
  Verdict v;
  v.output = get<std::string>(j, "output");
  v.kind = Kind(get<int>(j, "kind"));
  v.pass = get<bool>(j, "pass"), v.warn = get<bool>(j, "warn");
  v.failed = get<uint32_t>(j, "failed");
  v.reason = get<std::string>(j, "reason");
  v.worst_index = get<int64_t>(j, "worst_index");
  v.expected = get_num(j, "expected"), v.found = get_num(j, "found"), v.bound = get_num(j, "bound");
  v.budget_used = get_num(j, "budget_used");
  v.compared = get<int64_t>(j, "compared"), v.over_budget = get<int64_t>(j, "over_budget");
  v.cosine = get_num(j, "cosine"), v.cosine_min = get_num(j, "cosine_min");
  v.norm_ratio = get_num(j, "norm_ratio"), v.norm_ratio_tol = get_num(j, "norm_ratio_tol");
  v.max_abs_rel = get_num(j, "max_abs_rel"), v.max_abs_rel_limit = get_num(j, "max_abs_rel_limit");
  v.max_ulp = get_num(j, "max_ulp");
  v.nan_found = get<int64_t>(j, "nan_found"), v.nan_missing = get<int64_t>(j, "nan_missing");
  v.inf_mismatch = get<int64_t>(j, "inf_mismatch"), v.unwritten = get<int64_t>(j, "unwritten");
  v.near_ties = get<int64_t>(j, "near_ties");
  return v;
}

}  // namespace

json result_to_json(const CaseResult& r) {
  json outs = json::array();
  for (const Verdict& v : r.outputs) outs.push_back(verdict_to_json(v));
  return {{"op", r.op},           {"kernel", r.kernel},       {"manifest", r.manifest},
          {"params", r.params},   {"shape", r.shape},         {"seed", r.seed},
          {"subgroup", r.subgroup}, {"outputs", outs},        {"skipped", r.skipped},
          {"skip_reason", r.skip_reason}, {"error", r.error}, {"gpu_ms", num(r.gpu_ms)},
          {"bytes", num(r.bytes)}, {"flops", num(r.flops)},   {"system_memory", r.system_memory},
          {"case_file", r.case_file}, {"case_pos", r.case_pos}, {"plan_index", r.plan_index},
          {"device_fault", r.device_fault}, {"difference", r.difference},
          {"timing", {{"runs", r.timing.runs}, {"cold_lo", num(r.timing.cold_lo)}, {"cold_hi", num(r.timing.cold_hi)},
                      {"warm", num(r.timing.warm)}, {"warm_lo", num(r.timing.warm_lo)},
                      {"warm_hi", num(r.timing.warm_hi)}, {"stream", num(r.timing.stream)},
                      {"stream_lo", num(r.timing.stream_lo)}, {"stream_hi", num(r.timing.stream_hi)},
                      {"stream_copies", r.timing.stream_copies}, {"stream_cold", r.timing.stream_cold}}}};
}

CaseResult result_from_json(const json& j) {
  MOE_CHECK(j.is_object(), "worker result: expected an object");
  CaseResult r;
  r.op = get<std::string>(j, "op"), r.kernel = get<std::string>(j, "kernel");
  r.manifest = get<std::string>(j, "manifest"), r.params = get<std::string>(j, "params");
  r.shape = get<std::string>(j, "shape"), r.seed = get<uint64_t>(j, "seed");
  r.subgroup = get<uint32_t>(j, "subgroup");
  for (const json& v : get<json>(j, "outputs")) r.outputs.push_back(verdict_from_json(v));
  r.skipped = get<bool>(j, "skipped"), r.skip_reason = get<std::string>(j, "skip_reason");
  r.error = get<std::string>(j, "error");
  r.gpu_ms = get_num(j, "gpu_ms"), r.bytes = get_num(j, "bytes"), r.flops = get_num(j, "flops");
  r.system_memory = get<bool>(j, "system_memory"), r.case_file = get<std::string>(j, "case_file");
  r.case_pos = get<int64_t>(j, "case_pos"), r.plan_index = get<int>(j, "plan_index");
  r.device_fault = get<bool>(j, "device_fault");
  // Absent in results written before declared differences existed: none was declared.
  if (j.contains("difference")) r.difference = get<std::string>(j, "difference");
  const json t = get<json>(j, "timing");
  r.timing.runs = get<int>(t, "runs");
  r.timing.cold_lo = get_num(t, "cold_lo"), r.timing.cold_hi = get_num(t, "cold_hi");
  r.timing.warm = get_num(t, "warm"), r.timing.warm_lo = get_num(t, "warm_lo"), r.timing.warm_hi = get_num(t, "warm_hi");
  r.timing.stream = get_num(t, "stream"), r.timing.stream_lo = get_num(t, "stream_lo");
  r.timing.stream_hi = get_num(t, "stream_hi"), r.timing.stream_copies = get<int>(t, "stream_copies");
  r.timing.stream_cold = get<bool>(t, "stream_cold");
  return r;
}

}  // namespace moe::compare
