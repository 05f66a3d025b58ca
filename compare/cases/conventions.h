// Op conventions (docs/manifests.md "Conventions"): fields of an op's params that say how an
// engine writes the op (delta_net's log decay, qk_norm's eps form, ...), listed by the params
// struct's visit_conventions. A manifest kernel's "conventions" sets them, as expressions over
// the case's params; the op's cases are then built with them set (same shapes, seeds and draws).
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "compare/manifest/manifest.h"
#include "core/check.h"
#include "core/params.h"

namespace moe::compare {

// The convention field names of `op`, in its params' order (empty: the op has none).
std::vector<std::string> op_conventions(const std::string& op);
// "decay_log, head_group, out_scale", or for an op without any "op 'rmsnorm' has no conventions".
std::string describe_conventions(const std::string& op);

// "decay_log=1 out_scale=1 / sqrt(value_dim)", or "none" for the op's default form.
inline std::string conventions_text(const Conventions& conv) {
  std::string out;
  for (const auto& [name, expr] : conv) out += (out.empty() ? "" : " ") + name + "=" + expr;
  return out.empty() ? "none" : out;
}

template <class P>
std::vector<std::string> convention_names() {
  std::vector<std::string> out;
  const P d{};
  P::visit_conventions(d, [&](const char* name, const auto&) { out.push_back(name); });
  return out;
}

// p with each declared convention evaluated over p's fields (as the case's expression variables,
// before any convention is set) and stored in its field: an integer field takes only an integral
// value, a float field a finite one that fits. Errors name the field, the expression and value.
template <class P>
P with_conventions(P p, const Conventions& conv) {
  ExprVars vars;
  p.visit([&](const char* name, const auto& value) { vars[name] = double(value); });
  for (const auto& entry : conv) {  // not a structured binding: clang 14 cannot capture one in a lambda
    const std::string& name = entry.first;
    const std::string& expr = entry.second;
    const double v = eval_expr(expr, vars);
    bool found = false;
    P::visit_conventions(p, [&](const char* field, auto& value) {
      if (name != field) return;
      found = true;
      using T = std::decay_t<decltype(value)>;
      if constexpr (std::is_integral_v<T>) {
        MOE_CHECK(std::floor(v) == v && std::fabs(v) < 1e15,
                  name << " = " << expr << " = " << format_value(v) << ", expected an integer");
        value = T(v);
      } else {
        MOE_CHECK(std::isfinite(v) && std::fabs(v) <= 3.4028234663852886e38,
                  name << " = " << expr << " = " << format_value(v) << ", expected a finite f32 value");
        value = T(v);
      }
    });
    MOE_CHECK(found, "no convention '" << name << "'");  // load_manifest checked the names
  }
  return p;
}

}  // namespace moe::compare
