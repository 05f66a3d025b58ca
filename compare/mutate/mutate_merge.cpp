// `mutate --rescore` of a sharded run's reports: the N shards of one run put back together.
#include <algorithm>

#include "compare/mutate/mutate.h"
#include "compare/run/plan.h"
#include "core/check.h"

namespace moe::compare {
namespace {

struct Part {
  std::string path;
  int64_t index = 0, count = 1;
  MutateReport rep;
};

// Appends the items of `from` not yet in `to`, in order.
void union_into(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& s : from)
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
}

Part read_part(const std::string& path) {
  Part p{path, 0, 1, read_mutate_json(path)};
  MOE_CHECK(!p.rep.shard.empty(), "mutate --rescore: '" << path << "' is not a shard's report (no \"shard\": "
                                                         "several reports must be the N of a mutate --shard I/N run)");
  const Shard sh = parse_shard_text(p.rep.shard, "mutate --rescore: '" + path + "': its shard");
  p.index = sh.index, p.count = sh.count;
  return p;
}

}  // namespace

MutateReport merge_mutate_shards(const std::vector<std::string>& paths) {
  std::vector<Part> parts;
  for (const std::string& path : paths) parts.push_back(read_part(path));
  const int64_t n = parts.front().count;
  MOE_CHECK(int64_t(parts.size()) == n, "mutate --rescore: " << parts.size() << " reports given, '" << parts.front().path
                                                             << "' is one of " << n << " shards");
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.index < b.index; });
  for (int64_t i = 0; i < n; ++i) {
    const Part& p = parts[size_t(i)];
    MOE_CHECK(p.count == n, "mutate --rescore: '" << p.path << "' is shard " << p.rep.shard << ", the others are of " << n);
    MOE_CHECK(p.index == i, "mutate --rescore: shard " << i << "/" << n << " is missing ('" << p.path << "' is "
                                                       << p.rep.shard << " too)");
    MOE_CHECK(p.rep.bundled == parts.front().rep.bundled,
              "mutate --rescore: '" << p.path << "' and '" << parts.front().path << "' mutated different kernel sets");
  }
  // Mutant g of the run is shard g % N's (g / N)-th: take them round robin. Shard i of a run of
  // `total` mutants holds exactly ceil((total - i) / N) of them.
  MutateReport out;
  size_t total = 0;
  for (const Part& p : parts) total += p.rep.mutants.size();
  for (size_t i = 0; i < size_t(n); ++i)
    MOE_CHECK(parts[i].rep.mutants.size() == (total - std::min(total, i) + size_t(n) - 1) / size_t(n),
              "mutate --rescore: '" << parts[i].path << "' holds " << parts[i].rep.mutants.size()
                                    << " mutants, not shard " << parts[i].rep.shard << "'s share of a run of " << total);
  for (size_t g = 0; g < total; ++g) out.mutants.push_back(parts[g % size_t(n)].rep.mutants[g / size_t(n)]);
  for (const Part& p : parts) {
    union_into(out.no_source, p.rep.no_source), union_into(out.not_found, p.rep.not_found);
    union_into(out.no_cases, p.rep.no_cases), union_into(out.baseline_fails, p.rep.baseline_fails);
    for (const auto& [unit, cases] : p.rep.baseline_units)
      out.baseline_units[unit] = std::max(out.baseline_units[unit], cases);  // the same in every shard that ran it
    out.interrupted = out.interrupted || p.rep.interrupted;
  }
  for (const auto& [unit, cases] : out.baseline_units) out.baseline_cases += cases;
  out.bundled = parts.front().rep.bundled;
  return out;
}

}  // namespace moe::compare
