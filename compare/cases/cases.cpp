#include "compare/cases/cases.h"

#include "compare/cases/conventions.h"
#include "core/check.h"
#include "ops/delta_net.h"
#include "ops/qk_norm.h"
#include "ops/router_noaux.h"

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

// Ops with conventions: their cases with a kernel's conventions set (<stem>_case.cpp), and the
// convention fields their params list.
using ConventionCasesFn = std::vector<OpCase> (*)(bool remainders, bool real, uint64_t seed, const Conventions& conv);
std::vector<OpCase> delta_net_conv_cases(bool, bool, uint64_t, const Conventions&);
std::vector<OpCase> router_noaux_conv_cases(bool, bool, uint64_t, const Conventions&);
std::vector<OpCase> qk_norm_conv_cases(bool, bool, uint64_t, const Conventions&);

namespace {

struct ConventionEntry {
  const char* op;
  ConventionCasesFn fn;
  std::vector<std::string> (*names)();
};
const ConventionEntry kConventionCases[] = {
    {"delta_net", &delta_net_conv_cases, &convention_names<DeltaNetParams>},
    {"qk_norm", &qk_norm_conv_cases, &convention_names<QkNormParams>},
    {"router_noaux", &router_noaux_conv_cases, &convention_names<RouterNoauxParams>},
};

const ConventionEntry* convention_entry(const std::string& op) {
  for (const ConventionEntry& e : kConventionCases)
    if (op == e.op) return &e;
  return nullptr;
}

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

std::vector<std::string> op_conventions(const std::string& op) {
  const ConventionEntry* e = convention_entry(op);
  return e ? e->names() : std::vector<std::string>{};
}

std::string describe_conventions(const std::string& op) {
  std::string names;
  for (const std::string& n : op_conventions(op)) names += (names.empty() ? "" : ", ") + n;
  return names.empty() ? "op '" + op + "' has no conventions" : "op '" + op + "' has conventions " + names;
}

std::vector<OpCase> make_cases(const std::string& op, const std::string& shapes, uint64_t seed,
                               const std::string& only, const Conventions& conv, const std::string& where) {
  MOE_CHECK(shapes == "remainders" || shapes == "real" || shapes == "all" || shapes == "perf",
            "compare: --shapes '" << shapes << "', expected remainders, real, all or perf");
  if (!conv.empty()) {
    const ConventionEntry* e = convention_entry(op);
    MOE_CHECK(e, where << ": conventions: " << describe_conventions(op));
    if (shapes == "perf") return {};  // no timing shapes for these ops
    try {
      std::vector<OpCase> out = e->fn(shapes != "real", shapes != "remainders", seed, conv);
      for (OpCase& c : out) c.seed = seed;
      return out;
    } catch (const Error& err) {
      MOE_FAIL(where << ": conventions " << conventions_text(conv) << ": " << err.what());
    }
  }
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
