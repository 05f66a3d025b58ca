// NaN operands of min, max and clamp, at the instruction (Checker::nan_operand in
// spirv_access_checker.h says why).
#include "compare/vk/spirv_access_checker.h"

namespace moe::vk::detail {
namespace {

// GLSL.std.450's instructions whose result is undefined for a NaN operand (NMin / NMax / NClamp
// define it: the other operand).
const char* undefined_for_nan(uint32_t instruction) {
  switch (instruction) {
    case 37: return "min (FMin)";
    case 40: return "max (FMax)";
    case 43: return "clamp (FClamp)";
    default: return nullptr;
  }
}

}  // namespace

uint32_t Checker::bool_vector(uint32_t n) {
  for (const auto& [id, t] : type_)
    if (t.op == spv::OpTypeVector && t.a.size() == 2 && t.a[0] == bool_ && t.a[1] == n) return id;
  if (auto it = made_bool_vector_.find(n); it != made_bool_vector_.end()) return it->second;
  const uint32_t id = fresh();
  emit(globals_, spv::OpTypeVector, {id, bool_, n});
  return made_bool_vector_[n] = id;
}

void Checker::nan_operand(std::vector<uint32_t>& to, const std::vector<uint32_t>& inst) {
  // OpExtInst: result type, result, set, instruction, operands.
  if (glsl_set_ == 0 || inst.size() < 7 || inst[3] != glsl_set_) return;
  const char* what = undefined_for_nan(inst[4]);
  auto t = type_.find(inst[1]);
  if (!what || t == type_.end()) return;
  uint32_t n = 0;  // components of a vector (0: a scalar)
  if (t->second.op == spv::OpTypeVector) {
    auto c = type_.find(t->second.a[0]);
    if (c == type_.end() || c->second.op != spv::OpTypeFloat) return;
    n = t->second.a[1];
  } else if (t->second.op != spv::OpTypeFloat) {
    return;
  }
  uint32_t any = 0;
  for (size_t k = 5; k < inst.size(); ++k) {
    uint32_t nan = fresh();
    emit(to, spv::OpIsNan, {n ? bool_vector(n) : bool_, nan, inst[k]});
    if (n) {
      const uint32_t reduced = fresh();
      emit(to, spv::OpAny, {bool_, reduced, nan});
      nan = reduced;
    }
    if (any) {
      const uint32_t either = fresh();
      emit(to, spv::OpLogicalOr, {bool_, either, any, nan});
      nan = either;
    }
    any = nan;
  }
  record(to, any, std::string(what) + " with a NaN operand (which operand it returns is undefined)", Rank::kValue);
}

}  // namespace moe::vk::detail
