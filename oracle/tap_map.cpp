#include "oracle/tap_map.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/check.h"
#include "oracle/json_read.h"

namespace moe {

namespace {
constexpr size_t kMaxPlaceholders = 16;
}  // namespace

TapMap TapMap::parse(const std::string& text, const std::string& where) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::exception& e) {
    MOE_FAIL(where << ": malformed JSON: " << e.what());
  }
  MOE_CHECK(j.is_object() && j.contains("map") && j["map"].is_object(),
            where << ": expected {\"version\": 1, \"map\": {engine name: tap name}}");
  MOE_CHECK(j.contains("version") && json_int(j["version"], where + ": version") == 1, where << ": version: expected 1");
  for (const auto& [k, _] : j.items())
    MOE_CHECK(k == "version" || k == "map", where << ": unknown key \"" << k << "\"");
  TapMap m;
  for (const auto& [from, to] : j["map"].items()) {
    MOE_CHECK(to.is_string(), where << ": map[\"" << from << "\"]: expected a tap name string");
    Rule r;
    r.from = from, r.to = to.get<std::string>();
    std::set<std::string> seen;
    r.lits.emplace_back();
    for (size_t i = 0; i < from.size(); ++i) {
      if (from[i] != '{') {
        r.lits.back() += from[i];
        continue;
      }
      const size_t end = from.find('}', i);
      MOE_CHECK(end != std::string::npos, where << ": map key \"" << from << "\": unclosed {");
      const std::string var = from.substr(i + 1, end - i - 1);
      MOE_CHECK(!var.empty() && seen.insert(var).second,
                where << ": map key \"" << from << "\": empty or repeated placeholder {" << var << "}");
      r.vars.push_back(var);
      r.lits.emplace_back();
      i = end;
    }
    // Engine names number a layer, an expert, a token: a few placeholders. The bound keeps the
    // matcher's table (placeholders x name length) small.
    MOE_CHECK(r.vars.size() <= kMaxPlaceholders, where << ": map key \"" << from << "\" has " << r.vars.size()
                                                       << " placeholders, at most " << kMaxPlaceholders);
    // Every placeholder of the tap name must come from the key ({token} selects a row instead).
    for (size_t i = 0; (i = r.to.find('{', i)) != std::string::npos; ++i) {
      const size_t end = r.to.find('}', i);
      MOE_CHECK(end != std::string::npos, where << ": map value \"" << r.to << "\": unclosed {");
      const std::string var = r.to.substr(i + 1, end - i - 1);
      MOE_CHECK(seen.count(var) && var != "token",
                where << ": map value \"" << r.to << "\": placeholder {" << var << "} is not in the key \"" << from
                      << "\"" << (var == "token" ? " ({token} selects a row and cannot appear in the tap name)" : ""));
    }
    m.rules_.push_back(std::move(r));
  }
  MOE_CHECK(!m.rules_.empty(), where << ": the map is empty");
  return m;
}

TapMap TapMap::load(const std::string& path) {
  std::ifstream f(path);
  MOE_CHECK(f, path << ": cannot open the mapping file");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

// Where several splits of the digits match, std::regex's choice (the key used to be a regex
// lits0(\d+)lits1(\d+)...): each placeholder as long as the rest still matches, left to right.
// std::regex's backtracking recursed once per character (a 100k-digit name overflowed the
// stack); this is a table of where the rest of the key can match, built right to left, then one
// walk: O(placeholders x name length).
bool TapMap::match(const Rule& r, const std::string& name, std::vector<std::string>& values) {
  const size_t n = name.size(), k = r.vars.size();
  auto lit_at = [&](size_t i, size_t p) { return name.compare(p, r.lits[i].size(), r.lits[i]) == 0; };
  std::vector<size_t> run(n + 1, 0);  // run[p]: the digits starting at p
  for (size_t p = n; p-- > 0;) run[p] = name[p] >= '0' && name[p] <= '9' ? run[p + 1] + 1 : 0;
  // ok[i][p]: the key from literal i on matches name[p, n).
  std::vector<std::vector<char>> ok(k + 1, std::vector<char>(n + 1, 0));
  for (size_t p = 0; p <= n; ++p) ok[k][p] = n - p == r.lits[k].size() && lit_at(k, p);
  std::vector<size_t> nearest(n + 2);  // nearest[q]: the first q' >= q with ok[i + 1][q']
  for (size_t i = k; i-- > 0;) {
    nearest[n + 1] = SIZE_MAX;
    for (size_t q = n + 1; q-- > 0;) nearest[q] = ok[i + 1][q] ? q : nearest[q + 1];
    for (size_t p = 0; p <= n; ++p) {
      const size_t s = p + r.lits[i].size();  // the placeholder's first digit
      ok[i][p] = s < n && run[s] > 0 && nearest[s + 1] <= s + run[s] && lit_at(i, p);
    }
  }
  if (!ok[0][0]) return false;
  values.clear();
  for (size_t i = 0, p = r.lits[0].size(); i < k; ++i) {
    size_t q = p + run[p];
    while (!ok[i + 1][q]) --q;  // stops after p: ok[i][...] promised one
    values.push_back(name.substr(p, q - p));
    p = q + r.lits[i + 1].size();
  }
  return true;
}

std::optional<TapTarget> TapMap::map(const std::string& name) const {
  std::vector<std::string> values;
  for (const Rule& r : rules_) {
    if (!match(r, name, values)) continue;
    TapTarget t;
    t.tap = r.to;
    for (size_t v = 0; v < r.vars.size(); ++v) {
      const std::string& val = values[v];
      if (r.vars[v] == "token") {
        // \d+ matched, so only the range can be wrong (a name like t99999999999999999999.x).
        MOE_CHECK(val.size() <= 12, "tensor \"" << name << "\": token " << val << " (map key \"" << r.from
                                                  << "\") is not a plausible token index");
        t.token = std::stoll(val);
        continue;
      }
      const std::string ph = "{" + r.vars[v] + "}";
      for (size_t p; (p = t.tap.find(ph)) != std::string::npos;) t.tap.replace(p, ph.size(), val);
    }
    return t;
  }
  return std::nullopt;
}

}  // namespace moe
