// The arithmetic ceiling the prefill benchmarks report against, measured by the same binary on
// the SIMD target the fast tier's dispatch uses (so a pinned --simd=AVX2 run is held to AVX2's
// peak, not AVX-512's).
#pragma once

namespace moe::bench {

// f32 FMA throughput in GFLOP/s (2 flops per lane per FMA) with `threads` OpenMP threads, each
// running independent vector FMA chains (enough of them to cover FMA latency x FMA ports on
// current x86 and ARM cores) for about `seconds`; best of `reps` runs (short runs, many: on a
// shared machine some of them find every core free).
double fma_peak_gflops(int threads, double seconds = 0.1, int reps = 7);

}  // namespace moe::bench
