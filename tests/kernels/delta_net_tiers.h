// The delta_net tiers as one table (truth, f32, fast) and a bit-equality check, shared by the
// delta_net tests (delta_net_test.cpp, delta_net_conventions_test.cpp).
#pragma once
#include <cstring>
#include <span>
#include <vector>

#include "ops/delta_net.h"

namespace moe::test {

using DeltaNetFn = void (*)(const DeltaNetParams&, std::span<const float>, std::span<const float>,
                            std::span<const float>, std::span<const float>, std::span<const float>, std::span<float>,
                            std::span<float>);
inline const DeltaNetFn kDeltaNetTiers[3] = {&delta_net_ref<double>, &delta_net_ref<float>, &delta_net_fast};

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace moe::test
