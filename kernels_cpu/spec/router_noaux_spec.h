// router_noaux's spec: its shapes, its seeded inputs and its bounds, read by the CPU three-way
// check (kernels_cpu/check/router_noaux_check.cpp), the GPU cases
// (compare/cases/router_noaux_case.cpp, also for mutate) and, through the GPU backend, bisect.
// What it shares with router_topk (input kinds, weight bounds, the CPU judge):
// spec/router_topk_spec.h. The op itself: kernels_cpu/ops/router_noaux.h.
#pragma once
#include <span>
#include <vector>

#include "ops/router_noaux.h"
#include "spec/router_topk_spec.h"

namespace moe {

// Gate logits N(0, 1.5^2), bias U(-0.1, 0.1). NegativeBias: bias ~ -0.9 (where masking with 0.0
// instead of -inf would differ). Ties, NearTies (the grid; bias 0): exactly equal c inside groups
// and exactly equal group scores. AllEqual: one grid value per token, bias 0 (every expert and
// group ties). NonFinite: token 0 a NaN logit (bits 0xFF800001), token 1 a +inf and a -inf
// (ordinary: s = 1 and 0), token 2 a NaN late in the row, token 3 every logit -inf. Nan: every
// third token a NaN logit. Large: + 100 on every logit of even tokens and every third of odd
// ones (sigmoid exactly 1 in f32; HF's torch.sigmoid and the op's are defined there,
// docs/ops/moe.md "noaux_tc router"). Rows without NaN then have their groups kept apart beyond m's bounds
// (separate_groups in the .cpp): the GPU's inputs depend on the device model, as its bounds do.
struct RouterNoauxInputs {
  std::vector<float> logits, bias;
};
RouterNoauxInputs router_noaux_inputs(const RouterNoauxParams& p, uint64_t seed, RouterData d, const PrecisionModel& m);

using RouterNoauxShape = SpecShape<RouterNoauxParams, RouterVariant>;
// Remainders: one group (plain top-K), groups of 2, every group kept, K = every kept expert, odd
// group sizes; all equal, NaN/inf tokens, E past 256 and 512 (groups of 129), K above 10 and 16,
// K = 64 (the kernel's most), logits of 100 (every group kept). Real: DeepSeek-V3 / Cogito-V2 (docs/ops/models.md "Shape
// constants": E 256, K 8, n_group 8, topk_group 4, scale 2.5), decode and 64 tokens.
std::vector<RouterNoauxShape> router_noaux_shapes(bool remainders, bool real);

// idx, w: the truth (router_noaux_ref<double>) with rows sorted by w (router_sort_rows).
RouterBounds router_noaux_bounds(const RouterNoauxParams& p, std::span<const float> logits, std::span<const float> bias,
                                 std::span<const int32_t> idx, std::span<const float> w, const PrecisionModel& m);

}  // namespace moe
