// An op's shape list entry (kernels_cpu/spec/<op>_spec.h): a label, the op's params, the offset
// added to the run's seed (every shape draws inputs of its own), and what else the op's shapes
// vary (e.g. delta_net: special gates, prefill or decode), if anything.
#pragma once
#include <cstdint>
#include <string>
#include <variant>

namespace moe {

template <class Params, class Variant = std::monostate>
struct SpecShape {
  std::string label;  // "remainder dk 31, dv 33, r 2, 16 steps", "A17B K 10"
  Params p;
  uint64_t seed_offset = 0;
  Variant variant{};
};

}  // namespace moe
