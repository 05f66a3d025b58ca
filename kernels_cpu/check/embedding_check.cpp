#include <string>

#include "core/params.h"
#include "core/rng.h"
#include "core/test_data.h"
#include "ops/embedding.h"

namespace moe {
namespace {

CheckResult run_case(const std::string& label, const EmbeddingParams& p, uint64_t seed) {
  Rng rng(seed);
  const QuantStorage table = random_quant(rng.fork(1), p.vocab, p.dim, p.bits, p.group_size);
  // Random ids with both ends of the range always present (first and last position), and a
  // repeat when there is room.
  Rng id_rng = rng.fork(2);
  std::vector<int32_t> ids(p.tokens);
  for (auto& id : ids) id = int32_t(id_rng.below(p.vocab));
  if (p.tokens > 0) ids.front() = 0;
  if (p.tokens > 1) ids.back() = int32_t(p.vocab - 1);
  if (p.tokens > 3) ids[1] = ids[2];
  std::vector<float> truth(p.tokens * p.dim), r32(truth.size()), fast(truth.size());

  CheckResult res{"embedding", label, params_to_string(p), seed};
  res.truth_seconds = time_call([&] { embedding_ref<double>(p, table.view(), ids, truth); });
  res.ref32.seconds = time_call([&] { embedding_ref<float>(p, table.view(), ids, r32); });
  res.fast.seconds = time_call([&] { embedding_fast(p, table.view(), ids, fast); });

  // Bound 0 (bit-exact): each output is one dequantised weight q*s + b, where q*s is exact in f32
  // (< 2^8 times an 8-bit significand), so every tier rounds the same exact sum once (the f64
  // tier's f64 sum of two f32 values rounds to the same f32: 53 >= 2*24 + 2).
  res.ref32.add("y", truth, r32, 0.0);
  res.fast.add("y", truth, fast, 0.0);
  return res;
}

}  // namespace

std::vector<CheckResult> embedding_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    uint64_t k = 0;
    for (int bits : {2, 4, 8})
      for (int64_t tokens : {1, 31, 33, 67})
        for (int64_t dim : {64, 4160}) {
          const std::string label = "remainder " + std::to_string(tokens) + " tokens dim " + std::to_string(dim);
          out.push_back(run_case(label, {tokens, 999, dim, bits, 64}, seed + ++k));
        }
  }
  if (scope_has_real(scope)) {
    // The real tables are 248320 rows (0.5 GB of f32 output per tier at dim 4096 would be far too
    // much for a check): the real dims with a 1024-row table, and the real vocab with one group
    // per row, so ids 248319 and 0 go through the real bounds check and addressing.
    out.push_back(run_case("A17B dim, decode", {1, 1024, 4096, 4, 64}, seed));
    out.push_back(run_case("A17B dim, prefill 64", {64, 1024, 4096, 4, 64}, seed + 1));
    out.push_back(run_case("A3B dim, decode", {1, 1024, 2048, 4, 64}, seed + 2));
    out.push_back(run_case("A3B dim, prefill 64", {64, 1024, 2048, 4, 64}, seed + 3));
    out.push_back(run_case("real vocab 248320, dim 64", {16, 248320, 64, 4, 64}, seed + 4));
  }
  return out;
}

}  // namespace moe
