// Drift of a candidate's next-token distributions from a base (the truth): the figures
// llama.cpp's users read from `llama-perplexity --kl-divergence`, computed in f64 from two logits
// tensors of the same tokens (teacher-forced: row t is the prediction for position t + 1).
//   KLD(t)   = sum_v p_base(v) (ln p_base(v) - ln p_test(v)), p = softmax of the row (nats)
//   same top = the rows whose largest logit is at the same vocabulary index (ties: the lowest)
//   dp(t)    = p_test(next) - p_base(next), next = the token at position t + 1, where known
//   ln ratio = ln p_base(next) - ln p_test(next), whose mean is ln(PPL(test) / PPL(base))
// Means carry their standard error (sample std / sqrt(n)); the KLD percentiles are order
// statistics (nearest rank). A row with a NaN or infinite logit where the base is finite gives an
// infinite KLD and counts in `nonfinite`.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace moe {

struct Estimate {
  double mean = 0, std_error = 0;  // the standard error of the mean
};

struct DriftStats {
  int64_t rows = 0, vocab = 0;
  int64_t scored = 0;                  // rows with a next token (dp, ln ratio)
  int64_t nonfinite = 0;               // rows whose KLD is not finite
  Estimate kld;                        // over the rows with a finite KLD
  double kld_max = 0, kld_p999 = 0, kld_p99 = 0, kld_p90 = 0, kld_median = 0, kld_min = 0;
  Estimate same_top;                   // fraction of rows, with its binomial standard error
  int64_t first_top_change = -1;       // the first row whose top token differs (-1: none)
  Estimate dp;                         // p_test(next) - p_base(next)
  double dp_rms = 0, dp_max = 0, dp_min = 0;
  Estimate ln_ppl_ratio;               // mean of ln p_base(next) - ln p_test(next)
  std::vector<double> kld_per_row;     // every row's KLD, in row order
};

// `base` and `test`: [rows, vocab] row-major logits. `tokens`: the tokens whose positions the rows
// are (row t predicts tokens[t + 1]); empty: no dp or ln ratio. Throws moe::Error on mismatched
// sizes.
DriftStats drift_stats(std::span<const float> base, std::span<const float> test, int64_t rows, int64_t vocab,
                       std::span<const int32_t> tokens);

// Drift of a hidden state against position: per row (position) of two [rows, cols] tensors of the
// same tap, the L2 relative error |test - base| / |base| (|test - base| where base is all zero; a
// row with a NaN or infinite value in test, +inf). Summarised over `windows` equal spans of
// positions (the last takes the remainder): the mean and the largest per window, so a growth with
// position shows as rising windows.
struct PositionDrift {
  std::vector<double> rel;            // per row
  std::vector<int64_t> window_start;  // first row of each window
  std::vector<double> window_mean, window_max;
};
PositionDrift position_drift(std::span<const float> base, std::span<const float> test, int64_t rows, int64_t cols,
                             int64_t windows);

}  // namespace moe
