// Text for HTML reports (judge's, and compare's through compare/report/html_common.h).
#pragma once
#include <string>

namespace moe {

// `s` with <, >, & and " as entities: safe in element text and in double-quoted attributes.
inline std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

}  // namespace moe
