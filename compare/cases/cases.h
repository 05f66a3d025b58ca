// Per-op comparison cases: seeded inputs with realistic distributions (counter-based RNG: the
// same seed gives the same bytes everywhere), the f64-accumulating truth, and per output the
// decision kind and the error bound in f32 accumulation. Tensor names are the ones manifests
// bind ("x", "w", "y", "W.w", "W.scales", ...).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compare/manifest/manifest.h"
#include "compare/decide/metrics.h"

namespace moe::compare {

// Raw 32-bit words as uploaded: f32 bits, u32/i32 values, or bf16 pairs (element 0 in the low half).
// output = true: the buffer is poisoned (kPoison) before every step instead of uploaded, so an
// element the kernel does not write fails. State (inout) tensors are output = false: uploaded
// once and kept on the device between steps unless a step uploads them again.
struct HostTensor {
  ElemType type = ElemType::F32;
  int64_t elems = 0;
  std::vector<uint32_t> words;
  bool output = false;
};

// One step of a multi-step case (a token of a stateful op, a decode step of attention): the
// steps run in order on the same device buffers, so state written by step s is what step s + 1
// reads. Before a step: `upload` tensors are written (the new token's inputs; a state reset to
// the f32-rounded truth when the case compares steps in isolation), every output = true tensor
// is poisoned. After it: guard regions and untouched inputs are checked, then `outputs` (which
// may name state tensors) are decided against `truth`.
struct CaseStep {
  std::string label;                                   // "t=3", shown in verdict names
  std::map<std::string, HostTensor> upload;
  ExprVars vars;                                       // replace the case's vars for this step (e.g. past)
  std::map<std::string, OutputSpec> outputs;
  std::map<std::string, std::vector<double>> truth;
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
  // Multi-step cases: empty = one step that uploads `tensors` and decides `outputs`/`truth`.
  // Non-empty: `tensors` gives every tensor's size, type and first contents; `outputs`/`truth`
  // are unused and each step names what it compares.
  std::vector<CaseStep> steps;
  double flops = 0;  // floating-point operations of the whole case, for --perf (0: not stated)
};

// Ops with cases: ops of kernels_cpu/op_list.def and stage ops (compare/manifest/chains.h).
std::vector<std::string> case_ops();
// Cases of `op` for `shapes` ("remainders", "real", "all", or "perf": the timing shapes, beyond
// lavapipe's buffers, of the ops that have them; none for the others) and one seed. With `only`
// not empty, "perf" builds only the case of that label (a timing case is costly to build).
// `conv` (a kernel's "conventions", compare/cases/conventions.h): the cases with those op fields
// set, for the same shapes and seeds; an error evaluating or applying them names `where` (the
// manifest and kernel) and the field.
std::vector<OpCase> make_cases(const std::string& op, const std::string& shapes, uint64_t seed,
                               const std::string& only = "", const Conventions& conv = {},
                               const std::string& where = "");

}  // namespace moe::compare
