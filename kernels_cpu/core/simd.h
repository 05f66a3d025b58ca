// Which SIMD target the fast tier runs on. The fast kernels are compiled once per target
// (Google Highway) and the best one the CPU supports is picked at run time; tests and users can
// pin another one to exercise or compare every path from the same binary.
#pragma once
#include <string>
#include <vector>

namespace moe {

// The target the fast tier's dispatch uses now, e.g. "AVX3" (AVX-512), "AVX2", "SSE4", "NEON".
std::string simd_target();
// Every target this binary holds code for that this CPU runs, best first.
std::vector<std::string> simd_targets();
// Use `name` (one of simd_targets()) from now on; "" restores the best. An unknown or unsupported
// name is an error listing the valid ones.
void simd_pin(const std::string& name);

}  // namespace moe
