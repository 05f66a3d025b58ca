// Every op's params struct lists its fields once, in a visit(f) member calling
// f("name", value) per field; this turns it into "name=value name=value" for reports.
#pragma once
#include <sstream>
#include <string>

namespace moe {

template <class P>
std::string params_to_string(const P& p) {
  std::ostringstream os;
  bool first = true;
  p.visit([&](const char* name, const auto& value) {
    if (!first) os << ' ';
    first = false;
    os << name << '=' << value;
  });
  return os.str();
}

}  // namespace moe
