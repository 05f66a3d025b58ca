// fma_peak_gflops: compiled once per SIMD target by Highway like the fast tier (same target list:
// it links kernels_cpu, which sets HWY_WANT_AVX3_DL) and dispatched the same way, so
// simd_pin() moves it together with the kernels it is the ceiling of.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fma_peak.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "fma_peak.h"

HWY_BEFORE_NAMESPACE();
namespace moe::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 12 chains fit the 16 registers of SSE/AVX2 with the two constants; 24 the 32 of AVX-512/NEON.
// Either exceeds latency (4) x FMA ports (2) of current cores, so the chains never wait.
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
constexpr int kChains = 12;
#else
constexpr int kChains = 24;
#endif

// `iters` x kChains FMAs; returns the sum so that nothing is optimised away. The values stay
// finite: acc -> acc * m + a converges to a / (1 - m).
float FmaChains(int64_t iters) {
  const hn::ScalableTag<float> df;
  const auto m = hn::Set(df, 0.999f), a = hn::Set(df, 1e-3f);
  decltype(hn::Zero(df)) acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = hn::Set(df, float(i));
  // Unrolled by a fold: a plain inner loop let GCC 12 interchange the loops and keep acc[] in
  // memory (a load and a store per FMA: 60 % of the real peak).
  const auto round = [&]<size_t... I>(std::index_sequence<I...>) { ((acc[I] = hn::MulAdd(acc[I], m, a)), ...); };
  for (int64_t it = 0; it < iters; ++it) round(std::make_index_sequence<kChains>());
  for (int i = 1; i < kChains; ++i) acc[0] = hn::Add(acc[0], acc[i]);
  return hn::GetLane(hn::SumOfLanes(df, acc[0]));
}

// Flops of one FmaChains iteration.
double FlopsPerIter() { return 2.0 * kChains * double(hn::Lanes(hn::ScalableTag<float>())); }

}  // namespace moe::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::bench {

HWY_EXPORT(FmaChains);
HWY_EXPORT(FlopsPerIter);

double fma_peak_gflops(int threads, double seconds, int reps) {
  const auto chains = HWY_DYNAMIC_DISPATCH(FmaChains);
  const double flops_per_iter = HWY_DYNAMIC_DISPATCH(FlopsPerIter)();
  // Calibrate on one thread: iterations for `seconds`.
  int64_t iters = 1 << 16;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile float sink = chains(iters);
    (void)sink;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0.02) {
      iters = std::max<int64_t>(1, int64_t(double(iters) * seconds / s));
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    float sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    sum += chains(iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    volatile float sink = sum;
    (void)sink;
    best = std::max(best, flops_per_iter * double(iters) * threads / s / 1e9);
  }
  return best;
}

}  // namespace moe::bench
#endif  // HWY_ONCE
