// What an engine's C++ test does with an installed moeoracle: the f64 truth of one op next to
// the engine's own result, then its Vulkan kernel gated against that truth.
//   consumer [MANIFEST]   (no manifest: moeoracle's bundled kernels)
#include <cmath>
#include <cstdio>
#include <vector>

#include "compare/run/driver.h"
#include "ops/rmsnorm.h"

int main(int argc, char** argv) {
  // 1. The truth of rmsnorm on one token, against a float implementation of the engine's.
  moe::RmsNormParams p;
  p.rows = 1, p.dim = 8, p.eps = 1e-6f;
  const std::vector<float> x = {0.5f, -1.25f, 2.0f, 0.0f, 3.5f, -0.75f, 1.0f, -2.5f};
  const std::vector<float> w(8, 1.0f);
  std::vector<float> truth(8);
  moe::rmsnorm_ref<double>(p, x, w, truth);
  float ss = 0;
  for (float v : x) ss += v * v;
  const float inv = 1.0f / std::sqrt(ss / 8 + p.eps);
  double worst = 0;
  for (int i = 0; i < 8; ++i) worst = std::fmax(worst, std::fabs(x[i] * inv - truth[i]) / std::fabs(truth[i] + 1e-30));
  std::printf("rmsnorm: engine vs truth, worst relative error %.3g\n", worst);
  if (worst > 1e-5) return 1;  // a few f32 roundings of an 8-term sum: ~1e-7 expected

  // 2. The kernel gate: every rmsnorm case of one seed on the default Vulkan device.
  moe::compare::CompareOptions opt;
  opt.ops = "rmsnorm";
  opt.seeds = 1;
  opt.shapes = "remainders";
  opt.isolate = false;
  opt.quiet = true;
  if (argc > 1) opt.kernels = argv[1];
  const std::vector<moe::compare::CaseResult> results = moe::compare::compare_cases(opt);
  const moe::compare::Summary s = moe::compare::summarize(results);
  std::printf("compare rmsnorm: %ld passed, %ld failed, %ld skipped\n", long(s.passed), long(s.failed), long(s.skipped));
  return s.failed == 0 && s.passed > 0 ? 0 : 1;
}
