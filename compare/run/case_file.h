// Case files: one op case saved with everything needed to replay it alone — the exact input
// words, the params and expression variables, the f64 truth with its per-element bounds (or
// ULP budgets, or index scores), and which kernels ran it — so a failure found at model level
// (`moeoracle bisect`) becomes an op-level unit test (`moeoracle compare --case FILE`).
//
// Format: safetensors (readable by numpy/PyTorch). Tensors: "in/<name>" (U32 words as uploaded:
// f32 bits, bf16 pairs or integers), "truth/<name>", "bound/<name>", "ulp/<name>",
// "scores/<name>", "score_bound/<name>" (F64). __metadata__: "moeoracle_case" = "1" and "case" =
// JSON {op, shape, params, seed, flops, vars: {name: value}, tensors: {name: {type, elems,
// output}}, outputs: [{name, kind, row}], plan: {manifest, label}, origin: {...free text}}.
// Only single-step cases are saved (those bisect writes).
#pragma once
#include <map>
#include <string>

#include "compare/cases/cases.h"

namespace moe::compare {

struct CaseFile {
  OpCase c;
  std::string manifest;  // the manifest the case ran with ("" = bundled)
  std::string plan;      // the plan label (kernel name or "a -> b -> c")
  std::map<std::string, std::string> origin;  // where it came from (model, token, layer, module)
};

// Writes atomically; throws moe::Error naming the path.
void save_case_file(const std::string& path, const CaseFile& f);
// Reads and validates (every tensor present with the declared size, kinds known, bounds sized
// 0, 1 or elems); a bad file is a moe::Error naming the file and the entry.
CaseFile load_case_file(const std::string& path);

}  // namespace moe::compare
