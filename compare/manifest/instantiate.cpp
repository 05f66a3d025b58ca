// A loaded manifest entry made concrete for one case (compare/manifest/manifest.h "instantiate"):
// limits, push constants, spec constants and workgroup counts evaluated over the case's
// variables, each value checked to fit its type.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "compare/manifest/manifest.h"
#include "core/check.h"

namespace moe::compare {

// The raw 32 bits of `v` as `type` ("u32" | "i32" | "f32" | "bool"), or an error naming `what`.
uint32_t to_bits(double v, const std::string& type, const std::string& what) {
  auto show = [&] { return format_value(v); };
  bool integral = std::isfinite(v) && std::floor(v) == v;
  if (type == "u32") {
    MOE_CHECK(integral && v >= 0 && v <= 4294967295.0, what << " = " << show() << " does not fit a u32");
    return static_cast<uint32_t>(v);
  }
  if (type == "i32") {
    MOE_CHECK(integral && v >= -2147483648.0 && v <= 2147483647.0, what << " = " << show() << " does not fit an i32");
    return static_cast<uint32_t>(static_cast<int32_t>(v));
  }
  if (type == "bool") {
    // VkBool32: exactly 0 or 1; another value is a manifest mistake, not "true".
    MOE_CHECK(v == 0 || v == 1, what << " = " << show() << " is not a bool (0 or 1)");
    return static_cast<uint32_t>(v);
  }
  MOE_CHECK(type == "f32", what << ": unknown type \"" << type << "\"");
  // Rounding to the nearest float is intended (eps = 1e-6 becomes the f32 the CPU op also uses);
  // a finite value overflowing to inf, or a NaN, is not. An infinity the expression asks for
  // (`-inf`: ggml's clamp bounds when nothing is clamped) is exact.
  MOE_CHECK(std::isinf(v) || (std::isfinite(v) && std::fabs(v) <= std::numeric_limits<float>::max()),
            what << " = " << show() << " is not an f32 (a NaN, or a finite value beyond the f32 range)");
  return std::bit_cast<uint32_t>(static_cast<float>(v));
}

KernelInstance instantiate(const KernelEntry& k, const ExprVars& op_vars, const std::string& where) {
  std::string kw = where + " '" + k.name + "'";
  KernelInstance inst;
  inst.vars = with_lets(k, op_vars, where);
  const ExprVars& vars = inst.vars;
  for (const auto& limit : k.limits)
    if (!eval_limit(limit, vars, &inst.skipped)) return inst;

  inst.push_constants.assign(k.push_constant_size, 0);
  for (const auto& p : k.push_constants) {
    std::string what = kw + ": push constant \"" + p.name + "\" (" + p.value + ")";
    uint32_t bits = to_bits(eval_expr(p.value, vars), p.type, what);
    // reflect_and_check matched the offset against the block, so it lies inside it.
    MOE_CHECK(p.offset + 4 <= inst.push_constants.size(), what << ": offset " << p.offset << " is outside the "
                                                               << inst.push_constants.size() << "-byte block");
    std::memcpy(inst.push_constants.data() + p.offset, &bits, 4);
  }
  for (int d = 0; d < 3; ++d) inst.local_size[d] = k.local_size[d];
  for (const auto& s : k.specialization) {
    std::string what = kw + ": spec constant " + std::to_string(s.id) + " (" + s.value + ")";
    // An entry not reflected (type unknown) would be a programming error of the bundled set.
    MOE_CHECK(!s.type.empty(), what << ": type unknown; call reflect_and_check first");
    uint32_t bits = to_bits(eval_expr(s.value, vars), s.type, what);
    inst.spec_constants.emplace_back(s.id, bits);
    for (int d = 0; d < 3; ++d)
      if (k.local_size_spec_id[d] == s.id) {
        MOE_CHECK(bits >= 1, what << " = 0 is workgroup size dimension " << d << "; it must be >= 1");
        inst.local_size[d] = bits;
      }
  }
  for (int d = 0; d < 3; ++d) {
    std::string what = kw + ": dispatch[" + std::to_string(d) + "] (" + k.dispatch[d] + ")";
    double g = eval_expr(k.dispatch[d], vars);
    // Zero workgroups would run nothing; the poisoned outputs would then fail as a kernel bug.
    MOE_CHECK(g >= 1, what << " = " << format_value(g) << " workgroups; expected at least 1");
    inst.groups[d] = to_bits(g, "u32", what);
  }
  return inst;
}

}  // namespace moe::compare
