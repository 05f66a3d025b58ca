#include "oracle/tap_map.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/check.h"

namespace moe {

TapMap TapMap::parse(const std::string& text, const std::string& where) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::exception& e) {
    MOE_FAIL(where << ": malformed JSON: " << e.what());
  }
  MOE_CHECK(j.is_object() && j.contains("map") && j["map"].is_object(),
            where << ": expected {\"version\": 1, \"map\": {engine name: tap name}}");
  MOE_CHECK(j.value("version", 0) == 1, where << ": version: expected 1");
  for (const auto& [k, _] : j.items())
    MOE_CHECK(k == "version" || k == "map", where << ": unknown key \"" << k << "\"");
  TapMap m;
  for (const auto& [from, to] : j["map"].items()) {
    MOE_CHECK(to.is_string(), where << ": map[\"" << from << "\"]: expected a tap name string");
    Rule r;
    r.from = from, r.to = to.get<std::string>();
    std::string re;
    std::set<std::string> seen;
    for (size_t i = 0; i < from.size(); ++i) {
      const char ch = from[i];
      if (ch == '{') {
        const size_t end = from.find('}', i);
        MOE_CHECK(end != std::string::npos, where << ": map key \"" << from << "\": unclosed {");
        const std::string var = from.substr(i + 1, end - i - 1);
        MOE_CHECK(!var.empty() && seen.insert(var).second,
                  where << ": map key \"" << from << "\": empty or repeated placeholder {" << var << "}");
        r.vars.push_back(var);
        re += "(\\d+)";
        i = end;
      } else if (std::string("\\^$.|?*+()[]{}").find(ch) != std::string::npos) {
        re += '\\', re += ch;
      } else {
        re += ch;
      }
    }
    // Every placeholder of the tap name must come from the key ({token} selects a row instead).
    for (size_t i = 0; (i = r.to.find('{', i)) != std::string::npos; ++i) {
      const size_t end = r.to.find('}', i);
      MOE_CHECK(end != std::string::npos, where << ": map value \"" << r.to << "\": unclosed {");
      const std::string var = r.to.substr(i + 1, end - i - 1);
      MOE_CHECK(seen.count(var) && var != "token",
                where << ": map value \"" << r.to << "\": placeholder {" << var << "} is not in the key \"" << from
                      << "\"" << (var == "token" ? " ({token} selects a row and cannot appear in the tap name)" : ""));
    }
    r.re = std::regex(re);
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

std::optional<TapTarget> TapMap::map(const std::string& name) const {
  for (const Rule& r : rules_) {
    std::smatch m;
    if (!std::regex_match(name, m, r.re)) continue;
    TapTarget t;
    t.tap = r.to;
    for (size_t v = 0; v < r.vars.size(); ++v) {
      const std::string val = m[v + 1].str();
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
