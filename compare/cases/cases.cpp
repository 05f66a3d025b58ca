#include "compare/cases/cases.h"

#include "core/check.h"

namespace moe::compare {

// The case list: one line per op, each in compare/cases/<op>_case.cpp.
using CasesFn = std::vector<OpCase> (*)(bool remainders, bool real, uint64_t seed);
std::vector<OpCase> rmsnorm_cases(bool, bool, uint64_t);
std::vector<OpCase> residual_add_cases(bool, bool, uint64_t);
std::vector<OpCase> matvec_q_cases(bool, bool, uint64_t);
std::vector<OpCase> qk_norm_cases(bool, bool, uint64_t);
std::vector<OpCase> rmsnorm_gated_cases(bool, bool, uint64_t);
std::vector<OpCase> rope_cases(bool, bool, uint64_t);
std::vector<OpCase> rope_yarn_cases(bool, bool, uint64_t);
std::vector<OpCase> mla_attention_cases(bool, bool, uint64_t);
std::vector<OpCase> matvec_bf16_cases(bool, bool, uint64_t);
std::vector<OpCase> embedding_cases(bool, bool, uint64_t);
std::vector<OpCase> dequant_cases(bool, bool, uint64_t);
std::vector<OpCase> moe_combine_cases(bool, bool, uint64_t);
std::vector<OpCase> conv1d_step_cases(bool, bool, uint64_t);
std::vector<OpCase> decay_beta_cases(bool, bool, uint64_t);
std::vector<OpCase> delta_net_cases(bool, bool, uint64_t);
std::vector<OpCase> argmax_cases(bool, bool, uint64_t);
std::vector<OpCase> expert_buckets_cases(bool, bool, uint64_t);
std::vector<OpCase> router_topk_cases(bool, bool, uint64_t);
std::vector<OpCase> router_noaux_cases(bool, bool, uint64_t);
std::vector<OpCase> attention_cases(bool, bool, uint64_t);
std::vector<OpCase> kv_append_cases(bool, bool, uint64_t);
std::vector<OpCase> attention_scores_cases(bool, bool, uint64_t);
std::vector<OpCase> attention_softmax_cases(bool, bool, uint64_t);
std::vector<OpCase> attention_values_cases(bool, bool, uint64_t);
std::vector<OpCase> attention_gate_cases(bool, bool, uint64_t);
std::vector<OpCase> matmul_q_cases(bool, bool, uint64_t);
std::vector<OpCase> expert_gate_up_cases(bool, bool, uint64_t);
std::vector<OpCase> swiglu_expert_cases(bool, bool, uint64_t);
std::vector<OpCase> moe_permute_fuse_cases(bool, bool, uint64_t);
std::vector<OpCase> permute_gate_up_cases(bool, bool, uint64_t);
std::vector<OpCase> permute_down_scatter_cases(bool, bool, uint64_t);
// `--shapes perf`: timing shapes for the ops that have them (real_shapes.h).
std::vector<OpCase> matvec_q_perf_cases(uint64_t, const std::string& only);
std::vector<OpCase> matvec_bf16_perf_cases(uint64_t, const std::string& only);
std::vector<OpCase> matmul_q_perf_cases(uint64_t, const std::string& only);

namespace {

struct CaseEntry {
  const char* op;
  CasesFn fn;
  std::vector<OpCase> (*perf)(uint64_t, const std::string&) = nullptr;
};
const CaseEntry kCases[] = {
    {"rmsnorm", &rmsnorm_cases},
    {"residual_add", &residual_add_cases},
    {"matvec_q", &matvec_q_cases, &matvec_q_perf_cases},
    {"qk_norm", &qk_norm_cases},
    {"rmsnorm_gated", &rmsnorm_gated_cases},
    {"rope", &rope_cases},
    {"rope_yarn", &rope_yarn_cases},
    {"mla_attention", &mla_attention_cases},
    {"matvec_bf16", &matvec_bf16_cases, &matvec_bf16_perf_cases},
    {"embedding", &embedding_cases},
    {"dequant", &dequant_cases},
    {"moe_combine", &moe_combine_cases},
    {"conv1d_step", &conv1d_step_cases},
    {"decay_beta", &decay_beta_cases},
    {"delta_net", &delta_net_cases},
    {"argmax", &argmax_cases},
    {"expert_buckets", &expert_buckets_cases},
    {"router_topk", &router_topk_cases},
    {"router_noaux", &router_noaux_cases},
    {"attention", &attention_cases},
    {"kv_append", &kv_append_cases},
    {"attention_scores", &attention_scores_cases},
    {"attention_softmax", &attention_softmax_cases},
    {"attention_values", &attention_values_cases},
    {"attention_gate", &attention_gate_cases},
    {"matmul_q", &matmul_q_cases, &matmul_q_perf_cases},
    {"expert_gate_up", &expert_gate_up_cases},
    {"swiglu_expert", &swiglu_expert_cases},
    {"moe_permute_fuse", &moe_permute_fuse_cases},
    {"permute_gate_up", &permute_gate_up_cases},
    {"permute_down_scatter", &permute_down_scatter_cases},
};

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
      std::vector<OpCase> out = shapes != "perf" ? e.fn(shapes != "real", shapes != "remainders", seed)
                                : e.perf        ? e.perf(seed, only)
                                                : std::vector<OpCase>{};
      for (OpCase& c : out) c.seed = seed;
      return out;
    }
  MOE_FAIL("compare: no cases for op '" << op << "' yet");
}

}  // namespace moe::compare
