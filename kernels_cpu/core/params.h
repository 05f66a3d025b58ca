// Every op's params struct lists its fields once, in a visit(f) member calling
// f("name", value) per field; this turns it into "name=value name=value" for reports.
// An op with conventions (delta_net, qk_norm) also has a static visit_conventions(self, f) over
// those fields alone; a convention at its default value is left out of the text, so a case in
// the op's default form reads as it always has and one in another form says which.
#pragma once
#include <map>
#include <sstream>
#include <string>

namespace moe {

template <class P>
concept HasConventions = requires(const P& p) { P::visit_conventions(p, [](const char*, const auto&) {}); };

template <class P>
std::string params_to_string(const P& p) {
  std::map<std::string, std::string> defaults;  // convention name -> its default's text
  if constexpr (HasConventions<P>) {
    const P d{};
    P::visit_conventions(d, [&](const char* name, const auto& value) {
      std::ostringstream os;
      os << value;
      defaults[name] = os.str();
    });
  }
  std::ostringstream os;
  bool first = true;
  p.visit([&](const char* name, const auto& value) {
    std::ostringstream v;
    v << value;
    if (const auto it = defaults.find(name); it != defaults.end() && it->second == v.str()) return;
    if (!first) os << ' ';
    first = false;
    os << name << '=' << v.str();
  });
  return os.str();
}

}  // namespace moe
