// Small string helpers shared by the command line, the oracle and compare.
#pragma once
#include <sstream>
#include <string>
#include <vector>

namespace moe {

// "a,b,,c" -> {"a", "b", "c"}: the items of a comma-separated list, empty ones dropped (as every
// list option takes them: --ops, --taps, --kernel, --rules).
inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace moe
