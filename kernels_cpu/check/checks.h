// Every op's three-way self-check (check/<stem>_check.cpp), declared once from op_list.def:
// the f64 truth, the f32 tier and the fast tier on the op's spec shapes, one CheckResult per
// shape and tier. Kept out of the op headers: the checks are the tiers' test, not their API.
#pragma once
#include <cstdint>
#include <vector>

#include "core/check_util.h"

namespace moe {

#define MOE_OP(stem, summary) std::vector<CheckResult> stem##_check(uint64_t seed, CheckScope scope);
#include "op_list.def"
#undef MOE_OP

// The ops with conventions (ops/delta_net.h, ops/qk_norm.h), checked with conv's convention
// fields set on every shape (its other fields unused).
struct DeltaNetParams;
struct QkNormParams;
std::vector<CheckResult> delta_net_check_conventions(uint64_t seed, CheckScope scope, const DeltaNetParams& conv);
std::vector<CheckResult> qk_norm_check_conventions(uint64_t seed, CheckScope scope, const QkNormParams& conv);

}  // namespace moe
