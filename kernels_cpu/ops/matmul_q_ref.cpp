#include "core/math.h"
#include "ops/matmul_q.h"
#include "ops/matvec_q.h"

namespace moe {

void matmul_q_validate(const MatmulQParams& p, const QuantMatrix& W, std::span<const float> X, std::span<float> Y) {
  check_quant(W, "matmul_q", "W");
  MOE_CHECK(p.tokens >= 0, "matmul_q: tokens=" << p.tokens << ", expected >= 0");
  MOE_CHECK(W.rows == p.rows && W.cols == p.cols && W.bits == p.bits && W.group_size == p.group_size,
            "matmul_q: W is [" << W.rows << ", " << W.cols << "] bits=" << W.bits << " group_size=" << W.group_size
                               << ", params say [" << p.rows << ", " << p.cols << "] bits=" << p.bits
                               << " group_size=" << p.group_size);
  check_size(X, p.tokens * p.cols, "matmul_q", "X");
  check_size(Y, p.tokens * p.rows, "matmul_q", "Y");
}

// Token by token through the matvec reference: the same loop, so the same bits.
template <class Acc>
void matmul_q_ref(const MatmulQParams& p, const QuantMatrix& W, std::span<const float> X, std::span<float> Y) {
  matmul_q_validate(p, W, X, Y);
  const MatvecQParams& mp = p;
  for (int64_t t = 0; t < p.tokens; ++t)
    matvec_q_ref<Acc>(mp, W, X.subspan(t * p.cols, p.cols), Y.subspan(t * p.rows, p.rows));
}

template void matmul_q_ref<float>(const MatmulQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);
template void matmul_q_ref<double>(const MatmulQParams&, const QuantMatrix&, std::span<const float>, std::span<float>);

}  // namespace moe
