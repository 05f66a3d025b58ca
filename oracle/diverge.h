// Free-running generation against the truth: the truth (ref64) and a candidate tier decode greedily
// from the same prompt, each on its own state, until their next tokens differ; then, was it a
// near-tie? (docs/judge.md "Free-running generation").
//   margin    = truth[t_truth] - truth[t_cand] on the truth's logits of that step (>= 0)
//   honest    = max |ref32 - truth| over the same row, ref32 run on the same tokens (an honest f32
//               implementation's logit error there)
//   near-tie  : margin <= 2 * multiple * max(honest, 2^-24 max|truth|): an honest implementation's
//               error, with judge's allowance, could swap the two tokens; otherwise the candidate's
//               logits are off by more than any honest order explains.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "oracle/forward.h"
#include "oracle/model.h"

namespace moe {

struct DivergeOptions {
  int64_t steps = 64;                               // tokens to generate at most
  double multiple = 16;                             // judge's allowance (oracle/judge.h)
  ForwardOptions forward;                           // as the model is meant to run (the truth and the honest ref32)
  std::optional<ForwardOptions> candidate_forward;  // the candidate's, where it differs (a test's planted bug)
};

struct Divergence {
  std::vector<int32_t> agreed;  // the tokens both generated, in order
  bool diverged = false;
  int64_t step = -1;  // generation step of the first difference (0: right after the prompt)
  int32_t truth_token = -1, candidate_token = -1;
  double margin = 0;         // the truth's logit of its token minus of the candidate's
  double candidate_err = 0;  // max |candidate - truth| over that row
  double honest_err = 0;     // max |ref32 - truth| over that row
  double tolerance = 0;      // 2 * multiple * max(honest_err, 2^-24 max|truth|)
  bool near_tie = false;
};

// `candidate`: "ref32" or "fast". Throws moe::Error on a bad backend or token.
Divergence first_divergence(const Model& model, std::span<const int32_t> prompt, const std::string& candidate,
                            const DivergeOptions& opt);

}  // namespace moe
