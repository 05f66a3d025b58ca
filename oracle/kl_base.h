// llama.cpp's KL-divergence base file (`llama-perplexity --save-all-logits F` writes it,
// `--kl-divergence-base F --kl-divergence` scores a build against it), written from the truth so
// that a llama.cpp user scores their build against the f64 forward with the tool they already run
// (docs/gguf.md "Scoring llama.cpp against the truth").
//
// Layout (little-endian, llama.cpp's tools/perplexity at the commit docs/gguf.md names):
//   char[8]  "_logits_"
//   i32      n_ctx                 tokens per chunk
//   i32      n_vocab
//   i32      n_chunk
//   i32      tokens[n_chunk * n_ctx]
//   per chunk, per position j = n_ctx/2 .. n_ctx-2 (the logits that predict token j + 1):
//     nv = 2 ((n_vocab + 1) / 2) + 4 u16 words: f32 scale, f32 min_log_prob (4 words), then
//     q[n_vocab] (+ one zero word when n_vocab is odd), where with m = max logit and
//     lo = max(min logit, m - 16): scale = (m - lo) / 65535, min_log_prob = lo - m - ln sum e^(l - m),
//     q[v] = round((l[v] - lo) / scale) for l[v] > lo, else 0; ln p(v) ~ scale q[v] + min_log_prob.
// llama.cpp replaces each chunk's first token by BOS for the model when its vocabulary adds one
// (the file keeps the original token); the truth run does the same when given that BOS id.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace moe {

// One position's record (nv words, as above) from its logits; sums in f64.
void kl_base_record(std::span<const float> logits, std::span<uint16_t> record);
inline int64_t kl_base_record_words(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }

struct KlBaseFile {
  int32_t n_ctx = 0, n_vocab = 0, n_chunk = 0;
  std::vector<int32_t> tokens;     // [n_chunk * n_ctx]
  std::vector<uint16_t> records;   // [n_chunk * (n_ctx - 1 - n_ctx / 2) * nv]
  int64_t positions_per_chunk() const { return n_ctx - 1 - n_ctx / 2; }
  // The base log-probability of token v at record r (chunk-major), as llama.cpp reconstructs it.
  float log_prob(int64_t r, int64_t v) const;
};

// The whole file; a wrong magic, a negative or inconsistent count, or a size that is not exactly
// the layout's is an error naming the file, what was expected and what was found.
KlBaseFile read_kl_base(const std::string& path);

// Writes `f` atomically (oracle/atomic_file.h).
void write_kl_base(const std::string& path, const KlBaseFile& f);

}  // namespace moe
