// Per-op comparison cases: seeded inputs with realistic distributions (counter-based RNG: the
// same seed gives the same bytes everywhere), the f64-accumulating truth, and per output the
// decision kind and the error bound in f32 accumulation. Tensor names are the ones manifests
// bind ("x", "w", "y", "W.w", "W.scales", ...).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compare/manifest.h"
#include "compare/metrics.h"

namespace moe::compare {

// Raw 32-bit words as uploaded: f32 bits, u32/i32 values, or bf16 pairs (element 0 in the low half).
struct HostTensor {
  ElemType type = ElemType::F32;
  int64_t elems = 0;
  std::vector<uint32_t> words;
  bool output = false;
};

struct OpCase {
  std::string op;
  std::string shape;   // label, e.g. "A3B hidden" or "remainder 33"
  std::string params;  // "rows=1 dim=2048 ..." (the op's visit() fields)
  uint64_t seed = 0;
  ExprVars vars;       // the op's params by name, for manifest expressions
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, OutputSpec> outputs;           // decision per output tensor
  std::map<std::string, std::vector<double>> truth;    // per output tensor
};

// Ops with cases (the ops of the bundled kernels so far).
std::vector<std::string> case_ops();
// Cases of `op` for `shapes` ("remainders", "real" or "all") and one seed.
std::vector<OpCase> make_cases(const std::string& op, const std::string& shapes, uint64_t seed);

}  // namespace moe::compare
