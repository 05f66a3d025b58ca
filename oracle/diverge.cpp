#include "oracle/diverge.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/check.h"
#include "oracle/backend.h"
#include "oracle/state.h"

namespace moe {
namespace {

// One greedy decoder: a backend, its forward and its state; `last` the logits of its last step.
struct Decoder {
  std::unique_ptr<OpBackend> be;
  std::unique_ptr<Forward> f;
  ModelState state;
  std::vector<float> last;
  int64_t vocab = 0;

  Decoder(const Model& m, const std::string& tier, const ForwardOptions& fo, int64_t capacity)
      : be(make_cpu_backend(tier)),
        f(std::make_unique<Forward>(m, *be, fo)),
        state(ModelState::make(m.config(), capacity)),
        vocab(m.config().vocab) {}
  void feed(std::span<const int32_t> tokens) {
    const std::vector<float> l = f->run(tokens, state);
    last.assign(l.end() - vocab, l.end());  // the last position's row
  }
  int32_t next() const { return int32_t(std::max_element(last.begin(), last.end()) - last.begin()); }
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(double(a[i]) - double(b[i])));
  return e;
}

}  // namespace

Divergence first_divergence(const Model& model, std::span<const int32_t> prompt, const std::string& candidate,
                            const DivergeOptions& opt) {
  MOE_CHECK(!prompt.empty(), "diverge: empty prompt");
  MOE_CHECK(opt.steps >= 1, "diverge: steps " << opt.steps << ", expected >= 1");
  MOE_CHECK(candidate == "ref32" || candidate == "fast",
            "diverge: candidate '" << candidate << "': expected ref32 or fast");
  const int64_t capacity = int64_t(prompt.size()) + opt.steps;
  Decoder truth(model, "ref64", opt.forward, capacity),
      cand(model, candidate, opt.candidate_forward.value_or(opt.forward), capacity),
      honest(model, "ref32", opt.forward, capacity);
  truth.feed(prompt), cand.feed(prompt), honest.feed(prompt);
  Divergence d;
  for (int64_t s = 0; s < opt.steps; ++s) {
    const int32_t a = truth.next(), b = cand.next();
    if (a != b) {
      d.diverged = true, d.step = s, d.truth_token = a, d.candidate_token = b;
      d.margin = double(truth.last[size_t(a)]) - double(truth.last[size_t(b)]);
      d.candidate_err = max_abs_diff(cand.last, truth.last);
      d.honest_err = max_abs_diff(honest.last, truth.last);
      double mx = 0;
      for (float v : truth.last) mx = std::max(mx, double(std::fabs(v)));
      d.tolerance = 2 * opt.multiple * std::max(d.honest_err, 0x1.0p-24 * mx);
      d.near_tie = d.margin <= d.tolerance;
      return d;
    }
    d.agreed.push_back(a);
    if (s + 1 == opt.steps) break;
    const int32_t tok[1] = {a};
    truth.feed(tok), cand.feed(tok), honest.feed(tok);
  }
  return d;
}

}  // namespace moe
