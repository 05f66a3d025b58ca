// moe_bench: 4-bit matvec throughput against the memory-bandwidth ceiling of this machine.
//
//   BM_triad/T            STREAM triad a[i] = b[i] + s*c[i], 3 arrays of 1.5 x LLC each (4.5 x LLC
//                         in all), T threads. GB/s counts 4 streams of 4 B per element: the two
//                         reads, the write, and the write-allocate read of a (plain stores;
//                         the 3-stream STREAM convention is reported as GB/s_3arr = 3/4 of it).
//   BM_matvec_q_ref/R/C   matvec_q_ref<float> (the engines' f32 loop, single thread by design).
//   BM_matvec_q_fast/R/C/T/B  matvec_q_fast with T OpenMP threads, B-bit codes (group size 64),
//                         on the SIMD target the dispatch picks (--simd=NAME pins another one;
//                         the target is printed first, so one run's ratios are one target's).
//                         4096x262144 is the DRAM-resident size peers publish (ggml's q4_0).
//   BM_matvec_bf16_fast/R/C/T  matvec_bf16_fast over bf16 weights (2 B each), T threads.
//   BM_matvec_ggml_fast/R/C/T/G  matvec_ggml_fast with T threads over ggml type G (2 q4_0, 8 q8_0,
//                         12 q4_K, 14 q6_K), one token; GB/s counts the blocks' bytes. _hot: one
//                         cache-resident matrix (as BM_matvec_q_fast_hot).
//   BM_sgemv_f32/R/C/T    OpenBLAS cblas_sgemv over the same matrix dequantised to f32, T threads.
//   BM_fma_peak/T         f32 FMA peak of the dispatched target (bench/fma_peak.h), T threads: the
//                         arithmetic ceiling of the prefill product below.
//   BM_matmul_q_fast/R/C/Tok/T/B  matmul_q_fast (prefill: Tok tokens) with T threads, B-bit codes;
//                         GFLOP/s counts 2 R C Tok per call; pct_peak = of BM_fma_peak at T.
// GB/s counts the weight bytes one call reads: packed words + scales + biases for the quantized
// kernels, 4 B per weight for sgemv (x and y are negligible and stay in cache). Every iteration
// uses the next of a rotation set of distinct matrices whose total exceeds 2 x LLC (LLC read from
// sysfs), so weights come from memory, not from cache, as in a real forward pass.
// pct_ceiling = GB/s / the triad GB/s at the same thread count (the triads run first).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bandwidth.h"
#include "fma_peak.h"
#include "core/rng.h"
#include "core/simd.h"
#include "ops/matmul_q.h"
#include "ops/matvec_bf16.h"
#include "ops/matvec_ggml.h"
#include "spec/matvec_ggml_spec.h"
#include "ops/matvec_q.h"

namespace {

using moe::bf16;

const int64_t kLLC = moe::bench::llc_bytes();
const int kAllThreads = int(std::max(1u, std::thread::hardware_concurrency()));
std::map<int, double> g_ceiling;  // threads -> triad GB/s (4 streams)
std::map<int, double> g_peak;     // threads -> FMA peak GFLOP/s

// Matrices needed so that the rotation set exceeds 2 x LLC (at least 2).
int64_t rotation_count(int64_t bytes_per_matrix) { return std::max<int64_t>(2, 2 * kLLC / bytes_per_matrix + 1); }

// A rotation set of quantized [rows, cols] 4-bit matrices with random codes and realistic
// finite scales/biases (values only need to be representative, not model-like).
struct QuantPool {
  int64_t rows = 0, cols = 0, count = 0;
  int bits = 4;
  std::vector<uint32_t> w;
  std::vector<bf16> scales, biases;
  moe::QuantMatrix view(int64_t i) const {
    const int64_t wn = rows * cols * bits / 32, sn = rows * cols / 64;
    return {w.data() + i * wn, scales.data() + i * sn, biases.data() + i * sn, rows, cols, bits, 64};
  }
};

QuantPool& quant_pool(int64_t rows, int64_t cols, int bits = 4) {
  static std::unique_ptr<QuantPool> pool;
  if (pool && pool->rows == rows && pool->cols == cols && pool->bits == bits) return *pool;
  pool.reset();  // free the previous shape's set first
  pool = std::make_unique<QuantPool>();
  QuantPool& p = *pool;
  p.rows = rows, p.cols = cols, p.bits = bits;
  const int64_t bytes = rows * cols * bits / 8 + 2 * (rows * cols / 64) * 2;
  p.count = rotation_count(bytes);
  p.w.resize(p.count * rows * cols * bits / 32);
  p.scales.resize(p.count * rows * cols / 64), p.biases.resize(p.scales.size());
  uint64_t z = 12345;
  for (auto& v : p.w) v = uint32_t(moe::mix64(++z));
  for (size_t i = 0; i < p.scales.size(); ++i) {
    const float s = 0.002f * (1.0f + float(moe::mix64(++z) % 64) / 64.0f);
    p.scales[i] = moe::f32_to_bf16_rne(s), p.biases[i] = moe::f32_to_bf16_rne(-7.5f * s);
  }
  return p;
}

// A rotation set of the same kind of matrices dequantised to f32 (for sgemv).
struct F32Pool {
  int64_t rows = 0, cols = 0, count = 0;
  std::vector<float> a;
};

F32Pool& f32_pool(int64_t rows, int64_t cols) {
  static std::unique_ptr<F32Pool> pool;
  if (pool && pool->rows == rows && pool->cols == cols) return *pool;
  pool.reset();
  pool = std::make_unique<F32Pool>();
  F32Pool& p = *pool;
  p.rows = rows, p.cols = cols, p.count = rotation_count(rows * cols * 4);
  p.a.resize(p.count * rows * cols);
  uint64_t z = 777;
  for (auto& v : p.a) v = 0.002f * (float(moe::mix64(++z) % 16) - 7.5f);
  return p;
}

// Runs body(i) for the benchmark's iterations, i cycling over the rotation set; reports GB/s and
// % of the triad ceiling at `threads`, from wall-clock time (the kernels are multi-threaded).
template <class F>
void run_rotating(benchmark::State& state, int64_t count, int64_t bytes_per_call, int threads, F&& body) {
  int64_t i = 0;
  body(count - 1);  // warm the code and thread pools (this matrix is then the coldest)
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    body(i);
    i = (i + 1 == count) ? 0 : i + 1;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gbs = double(state.iterations()) * double(bytes_per_call) / s / 1e9;
  state.counters["GB/s"] = gbs;
  state.counters["rotation_MiB"] = double(count * bytes_per_call) / (1 << 20);
  if (g_ceiling.count(threads)) state.counters["pct_ceiling"] = 100.0 * gbs / g_ceiling[threads];
}

int threads_arg(int64_t a) { return a == 0 ? kAllThreads : int(a); }

void BM_triad(benchmark::State& state) {
  const int threads = threads_arg(state.range(0));
  double gbs4 = 0;
  for (auto _ : state) gbs4 = moe::bench::triad_gbs(threads, 3);  // best of 3 passes per iteration
  state.counters["GB/s"] = gbs4;
  state.counters["GB/s_3arr"] = gbs4 * 3 / 4;
  state.counters["threads"] = threads;
  g_ceiling[threads] = gbs4;
}

void BM_matvec_q_ref(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  QuantPool& p = quant_pool(rows, cols);
  const std::vector<float> x = moe::Rng(1).activations(cols);
  std::vector<float> y(rows);
  const moe::MatvecQParams mp{rows, cols, 4, 64};
  run_rotating(state, p.count, p.view(0).bytes(), 1, [&](int64_t i) { moe::matvec_q_ref<float>(mp, p.view(i), x, y); });
}

// hot = false: each call takes the next matrix of the rotation set (from DRAM). hot = true: the
// same matrix every call (512 x 2048: 0.5 MiB of codes, resident in L2): what the kernel computes
// per second when memory is not the limit. Both alike: the shape is compute bound; the hot one
// far above: the kernel waits on memory.
void matvec_q_fast_bench(benchmark::State& state, bool hot) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int threads = threads_arg(state.range(2)), bits = int(state.range(3));
  QuantPool& p = quant_pool(rows, cols, bits);
  const std::vector<float> x = moe::Rng(1).activations(cols);
  std::vector<float> y(rows);
  const moe::MatvecQParams mp{rows, cols, bits, 64};
  omp_set_num_threads(threads);
  run_rotating(state, hot ? 1 : p.count, p.view(0).bytes(), threads,
               [&](int64_t i) { moe::matvec_q_fast(mp, p.view(i), x, y); });
  state.counters["threads"] = threads;
}
void BM_matvec_q_fast(benchmark::State& state) { matvec_q_fast_bench(state, false); }
void BM_matvec_q_fast_hot(benchmark::State& state) { matvec_q_fast_bench(state, true); }

void BM_matvec_bf16_fast(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int threads = threads_arg(state.range(2));
  static std::vector<bf16> pool;  // filled once per size (the thread counts share it)
  const int64_t count = rotation_count(rows * cols * 2);
  if (pool.size() != size_t(count * rows * cols)) {
    pool.resize(size_t(count * rows * cols));
    uint64_t z = 99;
    for (auto& v : pool) v = moe::f32_to_bf16_rne(0.002f * (float(moe::mix64(++z) % 16) - 7.5f));
  }
  const std::vector<float> x = moe::Rng(1).activations(cols);
  std::vector<float> y(rows);
  omp_set_num_threads(threads);
  run_rotating(state, count, rows * cols * 2, threads, [&](int64_t i) {
    moe::matvec_bf16_fast({rows, cols}, std::span<const bf16>(pool).subspan(size_t(i * rows * cols), size_t(rows * cols)),
                          x, y);
  });
  state.counters["threads"] = threads;
}

// hot as for matvec_q_fast_bench: the same matrix every call (cache resident) or the rotation set.
void matvec_ggml_fast_bench(benchmark::State& state, bool hot) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int threads = threads_arg(state.range(2));
  const moe::MatvecGgmlParams mp{state.range(3), rows, cols, 1};
  static std::map<std::vector<int64_t>, std::vector<moe::MatvecGgmlInputs>> pools;  // per shape and type
  const size_t bytes = moe::BlockMatrix{uint32_t(mp.type), nullptr, rows, cols}.bytes();
  auto& pool = pools[{rows, cols, mp.type}];
  while (int64_t(pool.size()) < rotation_count(int64_t(bytes)))
    pool.push_back(moe::matvec_ggml_inputs(mp, 100 + pool.size(), false));
  const std::vector<float> x = moe::Rng(1).activations(cols);
  std::vector<float> y(rows);
  omp_set_num_threads(threads);
  run_rotating(state, hot ? 1 : int64_t(pool.size()), int64_t(bytes), threads,
               [&](int64_t i) { moe::matvec_ggml_fast(mp, pool[size_t(i)].view(mp), x, y); });
  state.counters["threads"] = threads;
}
void BM_matvec_ggml_fast(benchmark::State& state) { matvec_ggml_fast_bench(state, false); }
void BM_matvec_ggml_fast_hot(benchmark::State& state) { matvec_ggml_fast_bench(state, true); }

void BM_sgemv_f32(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int threads = threads_arg(state.range(2));
  F32Pool& p = f32_pool(rows, cols);
  const std::vector<float> x = moe::Rng(1).activations(cols);
  std::vector<float> y(rows);
  openblas_set_num_threads(threads);
  run_rotating(state, p.count, rows * cols * 4, threads, [&](int64_t i) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, int(rows), int(cols), 1.0f, p.a.data() + i * rows * cols, int(cols),
                x.data(), 1, 0.0f, y.data(), 1);
  });
  state.counters["threads"] = threads;
}

void BM_fma_peak(benchmark::State& state) {
  const int threads = threads_arg(state.range(0));
  double gflops = 0;
  for (auto _ : state) gflops = moe::bench::fma_peak_gflops(threads);
  state.counters["GFLOP/s"] = gflops;
  state.counters["threads"] = threads;
  g_peak[threads] = std::max(g_peak[threads], gflops);  // the best of --benchmark_repetitions
}

// Prefill: Y = X W^T for `tokens` tokens, weights from the same rotation set as the matvec (so
// from memory at small token counts, where the product is bandwidth bound).
void BM_matmul_q_fast(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  const int threads = threads_arg(state.range(3)), bits = int(state.range(4));
  QuantPool& p = quant_pool(rows, cols, bits);
  const std::vector<float> X = moe::Rng(1).activations(tokens * cols);
  std::vector<float> Y(tokens * rows);
  const moe::MatmulQParams mp{{rows, cols, bits, 64}, tokens};
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  run_rotating(state, p.count, p.view(0).bytes(), threads, [&](int64_t i) { moe::matmul_q_fast(mp, p.view(i), X, Y); });
  const double calls_per_s = state.counters["GB/s"] * 1e9 / double(p.view(0).bytes());
  const double gflops = calls_per_s * 2.0 * double(rows * cols * tokens) / 1e9;
  state.counters["GFLOP/s"] = gflops;
  if (g_peak.count(threads)) state.counters["pct_peak"] = 100.0 * gflops / g_peak[threads];
  state.counters["threads"] = threads;
}

// Shapes (out x in, docs/ops/verification.md "Shapes to cover"): A17B in_proj_qkv 12288x4096, A17B o_proj 4096x8192,
// A3B in_proj_qkv 8192x2048, A3B expert / k_proj 512x2048. Thread argument 0 = all threads.
void shapes(benchmark::internal::Benchmark* b, bool threaded) {
  for (auto [r, c] : {std::pair{12288, 4096}, {4096, 8192}, {8192, 2048}, {512, 2048}}) {
    if (threaded) {
      b->Args({r, c, 1})->Args({r, c, 0});
    } else {
      b->Args({r, c});
    }
  }
}

// The fast tier: 4-bit at every shape and at the peers' DRAM-resident 4096x262144; 2- and 8-bit
// at the A17B in_proj_qkv shape. Arguments rows, cols, threads, bits.
void fast_shapes(benchmark::internal::Benchmark* b) {
  for (auto [r, c] : {std::pair{12288, 4096}, {4096, 8192}, {8192, 2048}, {512, 2048}, {4096, 262144}})
    b->Args({r, c, 1, 4})->Args({r, c, 0, 4});
  for (int bits : {2, 8}) b->Args({12288, 4096, 1, bits})->Args({12288, 4096, 0, bits});
  // Rows of 8 KiB on one thread: where the hardware prefetcher alone fell behind (rows_avx512).
  b->Args({4096, 8192, 1, 8})->Args({4096, 16384, 1, 4});
}

// Prefill at the matvec's A3B/A17B shapes, tokens 1, 4, 16, 64 (and 2, 3, 8 at one shape), one and
// all threads, 4-bit; 2- and
// 8-bit at the A17B in_proj_qkv shape, 64 tokens. Arguments rows, cols, tokens, threads, bits.
void matmul_shapes(benchmark::internal::Benchmark* b) {
  for (auto [r, c] : {std::pair{12288, 4096}, {4096, 8192}, {8192, 2048}, {512, 2048}})
    for (int t : {1, 4, 16, 64}) b->Args({r, c, t, 1, 4})->Args({r, c, t, 0, 4});
  for (int t : {2, 3, 8}) b->Args({12288, 4096, t, 1, 4})->Args({12288, 4096, t, 0, 4});  // the small-T crossover
  for (int bits : {2, 8}) b->Args({12288, 4096, 64, 1, bits})->Args({12288, 4096, 64, 0, bits});
}

}  // namespace

BENCHMARK(BM_triad)->Arg(1)->Arg(0)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fma_peak)->Arg(1)->Arg(0)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_q_fast)->Apply(matmul_shapes)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_q_fast)->Apply(fast_shapes)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_q_fast_hot)
    ->Args({512, 2048, 1, 4})->Args({512, 2048, 1, 2})->Args({512, 2048, 1, 8})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_bf16_fast)->Args({12288, 4096, 1})->Args({12288, 4096, 0})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_ggml_fast)->Apply([](auto* b) {
  for (int64_t type : {2, 8, 12, 14}) b->Args({12288, 4096, 1, type})->Args({12288, 4096, 0, type});
})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_ggml_fast_hot)
    ->Args({512, 2048, 1, 2})->Args({512, 2048, 1, 8})->Args({512, 2048, 1, 12})->Args({512, 2048, 1, 14})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sgemv_f32)->Apply([](auto* b) { shapes(b, true); })->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_q_ref)->Apply([](auto* b) { shapes(b, false); })->UseRealTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  // --simd=NAME (ours, before Google Benchmark sees the flags): pin the fast tier's target.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--simd=", 0) == 0) {
      moe::simd_pin(std::string(argv[i]).substr(7));
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc, --i;
    }
  std::string all;
  for (const std::string& t : moe::simd_targets()) all += (all.empty() ? "" : " ") + t;
  std::printf("SIMD target: %s (this CPU and binary: %s)\n", moe::simd_target().c_str(), all.c_str());
  std::printf("LLC (sysfs, cpu0 highest level): %.1f MiB; all threads = %d\n", double(kLLC) / (1 << 20), kAllThreads);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
