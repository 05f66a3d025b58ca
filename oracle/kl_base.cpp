#include "oracle/kl_base.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "oracle/atomic_file.h"
#include "oracle/mapped_file.h"

namespace moe {

void kl_base_record(std::span<const float> logits, std::span<uint16_t> record) {
  const int64_t n = int64_t(logits.size());
  MOE_CHECK(n > 0 && int64_t(record.size()) == kl_base_record_words(n),
            "kl-base: a record of " << n << " logits needs " << kl_base_record_words(n) << " words, "
                                    << record.size() << " given");
  float hi = logits[0], lo = logits[0];
  for (float l : logits) {
    MOE_CHECK(std::isfinite(l), "kl-base: a logit is " << l << " (the file format holds finite logits only)");
    hi = std::max(hi, l), lo = std::min(lo, l);
  }
  lo = std::max(lo, hi - 16.0f);  // llama.cpp keeps 16 nats below the top; lower ones read as the floor
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - double(hi));
  const float scale = float((double(hi) - double(lo)) / 65535.0);
  const float min_log_prob = float(double(lo) - double(hi) - std::log(sum));
  std::memcpy(record.data(), &scale, 4);
  std::memcpy(record.data() + 2, &min_log_prob, 4);
  uint16_t* q = record.data() + 4;
  std::fill(q, record.data() + record.size(), uint16_t(0));
  if (scale == 0) return;
  for (int64_t v = 0; v < n; ++v)
    if (logits[size_t(v)] > lo)
      q[v] = uint16_t(std::min(65535.0, std::nearbyint((double(logits[size_t(v)]) - lo) / double(scale))));
}

float KlBaseFile::log_prob(int64_t r, int64_t v) const {
  const uint16_t* rec = records.data() + r * kl_base_record_words(n_vocab);
  float scale, min_log_prob;
  std::memcpy(&scale, rec, 4);
  std::memcpy(&min_log_prob, rec + 2, 4);
  return scale * float(rec[4 + v]) + min_log_prob;
}

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

int32_t i32_at(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

KlBaseFile read_kl_base(const std::string& path) {
  const MappedFile m(path);
  const uint8_t* p = m.data();
  const uint64_t size = m.size();
  MOE_CHECK(size >= 20 && std::memcmp(p, kMagic, 8) == 0,
            path << ": not a llama.cpp KL-divergence base file (expected the magic \"_logits_\" and a 20-byte header, "
                 << "found " << size << " bytes)");
  KlBaseFile f;
  f.n_ctx = i32_at(p + 8), f.n_vocab = i32_at(p + 12), f.n_chunk = i32_at(p + 16);
  MOE_CHECK(f.n_ctx >= 2 && f.n_vocab >= 1 && f.n_chunk >= 1,
            path << ": header says n_ctx " << f.n_ctx << ", n_vocab " << f.n_vocab << ", n_chunk " << f.n_chunk
                 << " (expected n_ctx >= 2, n_vocab >= 1, n_chunk >= 1)");
  const uint64_t tokens = uint64_t(f.n_ctx) * uint64_t(f.n_chunk);
  const uint64_t words = uint64_t(f.n_chunk) * uint64_t(f.positions_per_chunk()) * uint64_t(kl_base_record_words(f.n_vocab));
  const uint64_t want = 20 + 4 * tokens + 2 * words;
  MOE_CHECK(size == want, path << ": " << size << " bytes, the header (n_ctx " << f.n_ctx << ", n_vocab " << f.n_vocab
                               << ", n_chunk " << f.n_chunk << ") makes it " << want << " bytes");
  f.tokens.resize(tokens);
  std::memcpy(f.tokens.data(), p + 20, 4 * tokens);
  f.records.resize(words);
  std::memcpy(f.records.data(), p + 20 + 4 * tokens, 2 * words);
  for (uint64_t i = 0; i < tokens; ++i)
    MOE_CHECK(f.tokens[i] >= 0 && f.tokens[i] < f.n_vocab,
              path << ": token " << i << " is " << f.tokens[i] << ", outside the vocabulary [0, " << f.n_vocab << ")");
  return f;
}

void write_kl_base(const std::string& path, const KlBaseFile& f) {
  MOE_CHECK(f.n_ctx >= 2 && f.n_vocab >= 1 && f.n_chunk >= 1 &&
                f.tokens.size() == size_t(f.n_ctx) * size_t(f.n_chunk) &&
                f.records.size() == size_t(f.n_chunk) * size_t(f.positions_per_chunk()) *
                                        size_t(kl_base_record_words(f.n_vocab)),
            "kl-base: inconsistent contents for " << path << " (n_ctx " << f.n_ctx << ", n_vocab " << f.n_vocab
                                                  << ", n_chunk " << f.n_chunk << ", " << f.tokens.size()
                                                  << " tokens, " << f.records.size() << " record words)");
  AtomicFile out(path, "the KL-divergence base file");
  out.write(kMagic, 8);
  out.write(&f.n_ctx, 4), out.write(&f.n_vocab, 4), out.write(&f.n_chunk, 4);
  out.write(f.tokens.data(), 4 * f.tokens.size());
  out.write(f.records.data(), 2 * f.records.size());
  out.commit();
}

}  // namespace moe
