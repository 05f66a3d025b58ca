// Equivalence claims (claims.h).
#include "compare/mutate/claims.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace moe::compare {

using nlohmann::json;

namespace {

// Whether claim `c`'s condition holds for mutant `r`. "when": {"min_subgroup_size": N} and/or
// {"max_subgroup_size": N}: the argument needs subgroups of at least (at most) N lanes (e.g. at
// most as many subgroups per workgroup as lanes, so that a loop over the partial sums makes one
// pass), which every case of the mutant must have run at (unknown sizes: it does not apply).
void check_when(const std::string& path, const json& c) {
  if (!c.contains("when")) return;
  const json& w = c["when"];
  bool ok = w.is_object() && !w.empty();
  for (const auto& [key, value] : w.items())
    ok = ok && (key == "min_subgroup_size" || key == "max_subgroup_size") && value.is_number_unsigned();
  MOE_CHECK(ok, path << ": a claim's \"when\" takes \"min_subgroup_size\" and/or \"max_subgroup_size\" (unsigned); found "
                     << w.dump());
}

bool claim_applies(const json& c, const MutantResult& r) {
  if (!c.contains("when")) return true;
  const json& w = c["when"];
  if (r.min_subgroup == 0) return false;
  return r.min_subgroup >= w.value("min_subgroup_size", 0u) && r.max_subgroup <= w.value("max_subgroup_size", UINT32_MAX);
}

// The condition in words, for the report.
std::string condition_text(const json& c) {
  if (!c.contains("when")) return "";
  std::string t;
  if (c["when"].contains("min_subgroup_size")) t += "subgroup size >= " + c["when"]["min_subgroup_size"].dump();
  if (c["when"].contains("max_subgroup_size"))
    t += (t.empty() ? "" : " and ") + std::string("subgroup size <= ") + c["when"]["max_subgroup_size"].dump();
  return t;
}

// A claim's "kernel": one unit name, or a list of them (the same mutant of a file shared by several
// kernels: the unit is named after the file in a run of them all, after the kernel in a run of one).
bool is_unit_names(const json& k) {
  if (k.is_string()) return true;
  if (!k.is_array() || k.empty()) return false;
  return std::all_of(k.begin(), k.end(), [](const json& e) { return e.is_string(); });
}

std::vector<std::string> unit_names(const json& k) {
  if (k.is_string()) return {k.get<std::string>()};
  return k.get<std::vector<std::string>>();
}

// One claim about unit `kernel`'s mutant: a survivor becomes equivalent; a kill refutes the claim.
void apply_claim(const json& c, const std::string& kernel, MutateReport& rep) {
  const std::string id = c["mutant"], why = c["why"];
  auto it = std::find_if(rep.mutants.begin(), rep.mutants.end(),
                         [&](const MutantResult& r) { return r.kernel == kernel && r.mutant.id() == id; });
  if (it == rep.mutants.end()) return;  // not generated in this run (sampled out, or another rule set)
  if (it->status == MutantStatus::Survived) {
    if (!claim_applies(c, *it)) return;  // a survivor here: the device lacks the condition
    it->status = MutantStatus::Equivalent, it->why = why;
    if (c.contains("when"))
      it->why += " [holds at " + condition_text(c) + "; this run's cases: " + std::to_string(it->min_subgroup) +
                 (it->max_subgroup != it->min_subgroup ? ".." + std::to_string(it->max_subgroup) : "") + "]";
  } else if ((it->status == MutantStatus::Killed || it->status == MutantStatus::TimedOut) &&
             claim_applies(c, *it)) {  // a conditional claim is refuted only inside its condition
    rep.wrong_claims.push_back(kernel + " " + id + ": claimed equivalent (" + why + ") but killed by " + it->criterion);
  }
}

}  // namespace

void apply_claims_text(const std::string& path, const std::string& text, MutateReport& rep) {
  json claims;
  try {
    claims = json::parse(text, nullptr, true, true);
  } catch (const json::exception& e) {
    MOE_FAIL(path << ": malformed JSON: " << e.what());
  }
  MOE_CHECK(claims.is_array(), path << ": expected an array of {kernel, mutant, why}");
  // Every claim is checked before any is applied: a bad file changes nothing.
  for (const json& c : claims) {
    MOE_CHECK(c.is_object() && c.contains("kernel") && c.contains("mutant") && c.contains("why") &&
                  is_unit_names(c["kernel"]) && c["mutant"].is_string() && c["why"].is_string(),
              path << ": every claim needs \"kernel\" (a unit name or a list of them), \"mutant\" and \"why\" "
                   << "(strings); found " << c.dump());
    check_when(path, c);  // every claim's condition, whether or not its mutant was generated
  }
  for (const json& c : claims)
    for (const std::string& kernel : unit_names(c["kernel"])) apply_claim(c, kernel, rep);
}

}  // namespace moe::compare
