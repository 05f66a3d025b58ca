#include "compare/cases.h"

#include "core/check.h"

namespace moe::compare {

// One function per op, in compare/cases/<op>_case.cpp.
OpCase rmsnorm_case(const char* label, int64_t rows, int64_t dim, bool add_one, uint64_t seed);
OpCase residual_add_case(const char* label, int64_t n, uint64_t seed);
OpCase matvec_q_case(const char* label, int64_t rows, int64_t cols, int bits, uint64_t seed);

namespace {

bool want(const std::string& shapes, bool real) {
  MOE_CHECK(shapes == "remainders" || shapes == "real" || shapes == "all",
            "compare: --shapes '" << shapes << "', expected remainders, real or all");
  return shapes == "all" || (real ? shapes == "real" : shapes == "remainders");
}

}  // namespace

std::vector<std::string> case_ops() { return {"rmsnorm", "residual_add", "matvec_q"}; }

std::vector<OpCase> make_cases(const std::string& op, const std::string& shapes, uint64_t seed) {
  std::vector<OpCase> out;
  const bool rem = want(shapes, false), real = want(shapes, true);
  if (op == "rmsnorm") {
    if (rem)
      for (int64_t dim : {1, 31, 33, 67, 4099}) out.push_back(rmsnorm_case("remainder", 3, dim, dim % 2 == 1, seed + dim));
    if (real) {
      out.push_back(rmsnorm_case("A17B hidden", 1, 4096, false, seed));
      out.push_back(rmsnorm_case("A17B q heads", 32, 256, false, seed + 1));
      out.push_back(rmsnorm_case("A3B hidden", 1, 2048, false, seed + 2));
      out.push_back(rmsnorm_case("A3B prefill 16", 16, 2048, false, seed + 3));
      out.push_back(rmsnorm_case("HF checkpoint (1+w)", 2, 2048, true, seed + 4));
    }
  } else if (op == "residual_add") {
    if (rem)
      for (int64_t n : {1, 31, 255, 257, 4099}) out.push_back(residual_add_case("remainder", n, seed + n));
    if (real) {
      out.push_back(residual_add_case("A17B hidden", 4096, seed));
      out.push_back(residual_add_case("A3B prefill 64", 64 * 2048, seed + 1));
    }
  } else if (op == "matvec_q") {
    if (rem)
      for (int64_t rows : {1, 3, 31, 33, 67}) out.push_back(matvec_q_case("remainder", rows, 64 * (rows % 5 + 1), 4, seed + rows));
    if (real) {
      out.push_back(matvec_q_case("A17B k/v_proj", 512, 4096, 4, seed));
      out.push_back(matvec_q_case("A17B o_proj", 4096, 8192, 4, seed + 1));
      out.push_back(matvec_q_case("A3B in_proj_qkv", 8192, 2048, 4, seed + 2));
      out.push_back(matvec_q_case("A3B expert down", 2048, 512, 4, seed + 3));
      out.push_back(matvec_q_case("A3B shared_expert_gate", 1, 2048, 4, seed + 4));
    }
  } else {
    MOE_FAIL("compare: no cases for op '" << op << "' yet (cases exist for rmsnorm, residual_add, matvec_q)");
  }
  for (OpCase& c : out) c.seed = seed;
  return out;
}

}  // namespace moe::compare
