// softmax_in_place: the softmax of docs/ops/README.md "Scalar helpers" as the engines compute it, shared by every
// attention tier that follows their order (attention_ref, mla_attention_ref).
// Shape contract: s[0, len), len >= 1, overwritten with the probabilities.
// Order: m = s[0], then m = s[i] only if s[i] > m (strict: a NaN score never becomes the max, but
// its exp enters the sum); e[i] = exp(s[i] - m) stored while sum += e[i] in i order; inv = 1/sum;
// s[i] = e[i] * inv. With Acc = double the same formulas in f64 (the truth).
#pragma once
#include <cmath>
#include <cstdint>

namespace moe {

template <class Acc>
void softmax_in_place(Acc* s, int64_t len) {
  Acc m = s[0];
  for (int64_t i = 1; i < len; ++i)
    if (s[i] > m) m = s[i];
  Acc sum = 0;
  for (int64_t i = 0; i < len; ++i) {
    s[i] = std::exp(s[i] - m);
    sum += s[i];
  }
  const Acc inv = Acc(1) / sum;
  for (int64_t i = 0; i < len; ++i) s[i] *= inv;
}

}  // namespace moe
