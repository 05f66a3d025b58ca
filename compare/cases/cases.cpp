#include "compare/cases/cases.h"

#include "core/check.h"

namespace moe::compare {

// The case list, generated: every op of kernels_cpu/op_list.def, then every stage op of
// compare/manifest/stage_list.def, has `<stem>_cases` in compare/cases/<stem>_case.cpp.
using CasesFn = std::vector<OpCase> (*)(bool remainders, bool real, uint64_t seed);
#define MOE_OP(stem, summary) std::vector<OpCase> stem##_cases(bool, bool, uint64_t);
#define MOE_STAGE(stem, summary) MOE_OP(stem, summary)
#include "op_list.def"
#include "compare/manifest/stage_list.def"
#undef MOE_STAGE
#undef MOE_OP

// `--shapes perf`: timing shapes for the ops that have them (real_shapes.h).
using PerfFn = std::vector<OpCase> (*)(uint64_t, const std::string& only);
std::vector<OpCase> matvec_q_perf_cases(uint64_t, const std::string& only);
std::vector<OpCase> matvec_bf16_perf_cases(uint64_t, const std::string& only);
std::vector<OpCase> matmul_q_perf_cases(uint64_t, const std::string& only);

namespace {

struct CaseEntry {
  const char* op;
  CasesFn fn;
};
const CaseEntry kCases[] = {
#define MOE_OP(stem, summary) {#stem, &stem##_cases},
#define MOE_STAGE(stem, summary) MOE_OP(stem, summary)
#include "op_list.def"
#include "compare/manifest/stage_list.def"
#undef MOE_STAGE
#undef MOE_OP
};

const std::pair<const char*, PerfFn> kPerfCases[] = {
    {"matvec_q", &matvec_q_perf_cases},
    {"matvec_bf16", &matvec_bf16_perf_cases},
    {"matmul_q", &matmul_q_perf_cases},
};

PerfFn perf_cases_of(const std::string& op) {
  for (const auto& [name, fn] : kPerfCases)
    if (op == name) return fn;
  return nullptr;
}

}  // namespace

std::vector<std::string> case_ops() {
  std::vector<std::string> out;
  for (const CaseEntry& e : kCases) out.push_back(e.op);
  return out;
}

std::vector<OpCase> make_cases(const std::string& op, const std::string& shapes, uint64_t seed,
                               const std::string& only) {
  MOE_CHECK(shapes == "remainders" || shapes == "real" || shapes == "all" || shapes == "perf",
            "compare: --shapes '" << shapes << "', expected remainders, real, all or perf");
  for (const CaseEntry& e : kCases)
    if (op == e.op) {
      const PerfFn perf = perf_cases_of(op);
      std::vector<OpCase> out = shapes != "perf" ? e.fn(shapes != "real", shapes != "remainders", seed)
                                : perf          ? perf(seed, only)
                                                : std::vector<OpCase>{};
      for (OpCase& c : out) c.seed = seed;
      return out;
    }
  MOE_FAIL("compare: no cases for op '" << op << "' yet");
}

}  // namespace moe::compare
