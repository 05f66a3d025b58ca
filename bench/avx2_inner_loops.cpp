// The inner loop of an AVX2 quantized matvec under the fast tier's contract (each term
// fma(q, s, b) * x, activations not quantised), in the forms one could write, on one L2-resident
// block of 64 rows x 4096 columns, one thread: which form a core runs fastest is a property of its
// ports (vpermps is cheap on Intel, 2.2x slower than the shift/mask/convert form on a Zen 3).
// Every loop is unrolled (shift counts become immediates, accumulators stay in registers), as
// in the fast tier. Throughput in G weights/s; GB/s of packed codes + bf16 scales and biases = G weights/s x
// (bits / 8 + 4 / 64). Issue 12's ceiling argument rests on these (records/benchmarks-history.md, "Why the targets
// cannot be met on this core").
//   ./build/bench/avx2_inner_loops
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

constexpr int kRows = 64, kCols = 4096;  // 4-bit: 128 KiB of codes, inside a 512 KiB L2

struct Block {
  std::vector<uint32_t> w = std::vector<uint32_t>(kRows * kCols / 4);  // room for 8-bit codes
  std::vector<float> s = std::vector<float>(kRows * kCols / 64), b = s, x = std::vector<float>(kCols), y =
      std::vector<float>(kRows);
  Block() {
    std::mt19937 g(1);
    for (uint32_t& v : w) v = g();
    for (size_t i = 0; i < s.size(); ++i) s[i] = 0.01f * float(1 + i % 7), b[i] = -0.05f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13) - 6.0f;
  }
};

// Everything below runs only after run() has checked for AVX2 and FMA.
#pragma GCC push_options
#pragma GCC target("avx2,fma")

float hsum(__m256 v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

// The frame every form shares: two rows at a time, two accumulators per row (even and odd
// steps); chunk(r, c, acc) adds chunk c of rows r and r + 1.
template <class Chunk>
inline void row_pairs(Block& k, int chunks, Chunk&& chunk) {
  for (int r = 0; r < kRows; r += 2) {
    __m256 acc[2][2] = {{_mm256_setzero_ps(), _mm256_setzero_ps()}, {_mm256_setzero_ps(), _mm256_setzero_ps()}};
    for (int c = 0; c < chunks; ++c) chunk(r, c, acc);
    for (int i = 0; i < 2; ++i) k.y[r + i] = hsum(_mm256_add_ps(acc[i][0], acc[i][1]));
  }
}

__m256i load_words(const Block& k, int row, int c, int words_per_row) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&k.w[row * words_per_row + c * 8]));
}

// The scale (or bias) vector of a chunk of 8 words: 4-bit covers one group of 64, 2-bit two
// (one per half of the vector), 8-bit half a group.
template <int Bits>
__m256 chunk_scales(const std::vector<float>& v, int row, int c) {
  const int g = row * (kCols / 64);
  if constexpr (Bits == 2) return _mm256_setr_m128(_mm_set1_ps(v[g + 2 * c]), _mm_set1_ps(v[g + 2 * c + 1]));
  if constexpr (Bits == 4) return _mm256_broadcast_ss(&v[g + c]);
  if constexpr (Bits == 8) return _mm256_broadcast_ss(&v[g + c / 2]);
}

// The fast tier's AVX2 form at 2, 4 or 8 bits: step n takes code n of each word: shift, mask,
// convert, t = fma(q, s, b), acc = fma(t, x, acc).
template <int Bits>
void convert(Block& k) {
  constexpr int steps = 32 / Bits, wpr = kCols * Bits / 32;
  const __m256i mask = _mm256_set1_epi32((1 << Bits) - 1);
  row_pairs(k, wpr / 8, [&](int r, int c, __m256 (&acc)[2][2]) {
    __m256i w[2];
    __m256 s[2], b[2];
    for (int i = 0; i < 2; ++i) {
      w[i] = load_words(k, r + i, c, wpr);
      s[i] = chunk_scales<Bits>(k.s, r + i, c), b[i] = chunk_scales<Bits>(k.b, r + i, c);
    }
    #pragma GCC unroll 16
    for (int n = 0; n < steps; ++n) {
      const __m256 x = _mm256_loadu_ps(&k.x[c * 8 * steps + 8 * n]);
      #pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        const __m256i code = _mm256_and_si256(_mm256_srli_epi32(w[i], Bits * n), mask);
        acc[i][n & 1] = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_cvtepi32_ps(code), s[i], b[i]), x, acc[i][n & 1]);
      }
    }
  });
}

// 4-bit by table: per group the 16 values t = fma(q, s, b) in two 8-entry vectors, looked up by
// two vpermps and blended on the code's bit 3: one FMA per term instead of two.
void q4_table(Block& k) {
  constexpr int wpr = kCols / 8;
  const __m256 iota = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), eight = _mm256_set1_ps(8);
  row_pairs(k, wpr / 8, [&](int r, int c, __m256 (&acc)[2][2]) {
    __m256i w[2];
    __m256 lo[2], hi[2];
    for (int i = 0; i < 2; ++i) {
      w[i] = load_words(k, r + i, c, wpr);
      const __m256 s = chunk_scales<4>(k.s, r + i, c), b = chunk_scales<4>(k.b, r + i, c);
      lo[i] = _mm256_fmadd_ps(iota, s, b), hi[i] = _mm256_fmadd_ps(_mm256_add_ps(iota, eight), s, b);
    }
    #pragma GCC unroll 16
    for (int n = 0; n < 8; ++n) {
      const __m256 x = _mm256_loadu_ps(&k.x[c * 64 + 8 * n]);
      #pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        const __m256i idx = _mm256_srli_epi32(w[i], 4 * n);
        const __m256 bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(w[i], 28 - 4 * n));
        const __m256 t =
            _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo[i], idx), _mm256_permutevar8x32_ps(hi[i], idx), bit3);
        acc[i][n & 1] = _mm256_fmadd_ps(t, x, acc[i][n & 1]);
      }
    }
  });
}

// 2-bit by an in-lane table: vpermilps reads the low 2 bits of each index, so the shifted word
// indexes the 4 values of its group (low half: group g, high half: group g + 1) with no mask.
void q2_table(Block& k) {
  constexpr int wpr = kCols / 16;
  const __m256 q4 = _mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3);
  row_pairs(k, wpr / 8, [&](int r, int c, __m256 (&acc)[2][2]) {
    __m256i w[2];
    __m256 lut[2];
    for (int i = 0; i < 2; ++i) {
      w[i] = load_words(k, r + i, c, wpr);
      lut[i] = _mm256_fmadd_ps(q4, chunk_scales<2>(k.s, r + i, c), chunk_scales<2>(k.b, r + i, c));
    }
    #pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) {
      const __m256 x = _mm256_loadu_ps(&k.x[c * 128 + 8 * n]);
      #pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        const __m256i idx = _mm256_srli_epi32(w[i], 2 * n);
        acc[i][n & 1] = _mm256_fmadd_ps(_mm256_permutevar_ps(lut[i], idx), x, acc[i][n & 1]);
      }
    }
  });
}

// 8-bit bytes widened straight from memory (vpmovzxbd: one load-and-widen per 8 codes, x in
// column order), against convert<8>'s shift/mask/convert of words. Its own frame, group by group:
// in row_pairs' lambda this loop ran ~6 % slower on a Zen (EPYC, GCC 12).
void q8_widen(Block& k) {
  const int wpr = kCols / 4, gpr = kCols / 64;
  for (int r = 0; r < kRows; r += 2) {
    __m256 acc[2][2] = {{_mm256_setzero_ps(), _mm256_setzero_ps()}, {_mm256_setzero_ps(), _mm256_setzero_ps()}};
    for (int g = 0; g < gpr; ++g) {
      __m256 s[2], b[2];
      const uint8_t* row[2];
      for (int i = 0; i < 2; ++i) {
        row[i] = reinterpret_cast<const uint8_t*>(&k.w[(r + i) * wpr]) + g * 64;
        s[i] = _mm256_broadcast_ss(&k.s[(r + i) * gpr + g]), b[i] = _mm256_broadcast_ss(&k.b[(r + i) * gpr + g]);
      }
      #pragma GCC unroll 16
      for (int n = 0; n < 8; ++n) {
        const __m256 x = _mm256_loadu_ps(&k.x[g * 64 + 8 * n]);
        #pragma GCC unroll 2
        for (int i = 0; i < 2; ++i) {
          const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row[i] + 8 * n));
          const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
          acc[i][n & 1] = _mm256_fmadd_ps(_mm256_fmadd_ps(q, s[i], b[i]), x, acc[i][n & 1]);
        }
      }
    }
    for (int i = 0; i < 2; ++i) k.y[r + i] = hsum(_mm256_add_ps(acc[i][0], acc[i][1]));
  }
}

#pragma GCC pop_options

void run(benchmark::State& state, void (*f)(Block&)) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("this CPU has no AVX2/FMA");
    return;
  }
  Block k;
  for (auto _ : state) {
    f(k);
    benchmark::DoNotOptimize(k.y.data());
  }
  state.counters["Gweights/s"] = benchmark::Counter(double(kRows) * kCols, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_CAPTURE(run, q4_convert, convert<4>);
BENCHMARK_CAPTURE(run, q4_table, q4_table);
BENCHMARK_CAPTURE(run, q2_convert, convert<2>);
BENCHMARK_CAPTURE(run, q2_table, q2_table);
BENCHMARK_CAPTURE(run, q8_convert, convert<8>);
BENCHMARK_CAPTURE(run, q8_widen, q8_widen);
BENCHMARK_MAIN();
