// `kl-base`: llama.cpp's KL-divergence base file (oracle/kl_base.h) from the truth's forward, so
// that `llama-perplexity --kl-divergence-base F --kl-divergence` scores a llama.cpp build against
// it (docs/gguf.md "Scoring llama.cpp against the truth").
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "core/check.h"
#include "oracle/forward.h"
#include "oracle/kl_base.h"
#include "oracle/tokens.h"

namespace moe::cli {
namespace {

struct KlBaseOptions {
  std::string model, tokens, tokens_file, out;
  std::string backend = "ref64";
  int64_t ctx = 512, chunks = -1, bos = -1;
  int threads = 0;
};

int run_kl_base(const KlBaseOptions& opt) {
  const std::vector<int32_t> tokens = read_tokens(opt.tokens, opt.tokens_file, "kl-base");
  MOE_CHECK(opt.ctx >= 2 && opt.ctx <= (int64_t(1) << 30), "kl-base: --ctx " << opt.ctx << ", expected 2 or more");
  const int64_t available = int64_t(tokens.size()) / opt.ctx;
  MOE_CHECK(available >= 1, "kl-base: " << tokens.size() << " tokens make no chunk of --ctx " << opt.ctx);
  if (opt.threads > 0) omp_set_num_threads(opt.threads);
  auto model = Model::load(opt.model);
  const ModelConfig& c = model->config();
  check_token_range(tokens, c.vocab, "kl-base");
  MOE_CHECK(opt.bos < c.vocab, "kl-base: --bos " << opt.bos << " out of range [0, " << c.vocab << ")");
  auto backend = make_cpu_backend(opt.backend);
  Forward fwd(*model, *backend);

  KlBaseFile f;
  f.n_ctx = int32_t(opt.ctx), f.n_vocab = int32_t(c.vocab);
  f.n_chunk = int32_t(opt.chunks < 0 ? available : std::min(opt.chunks, available));
  MOE_CHECK(f.n_chunk >= 1, "kl-base: --chunks " << opt.chunks << ", expected 1 or more");
  f.tokens.assign(tokens.begin(), tokens.begin() + int64_t(f.n_chunk) * opt.ctx);
  const int64_t nv = kl_base_record_words(c.vocab), first = opt.ctx / 2;
  f.records.resize(size_t(f.n_chunk * f.positions_per_chunk() * nv));
  double nll = 0;
  for (int64_t k = 0; k < f.n_chunk; ++k) {
    std::vector<int32_t> chunk(f.tokens.begin() + k * opt.ctx, f.tokens.begin() + (k + 1) * opt.ctx);
    if (opt.bos >= 0) chunk[0] = int32_t(opt.bos);  // as llama-perplexity feeds the model
    ModelState state = ModelState::make(c, opt.ctx);
    const std::vector<float> logits = fwd.run(chunk, state);
    for (int64_t j = first; j < opt.ctx - 1; ++j) {
      const std::span<const float> row(logits.data() + j * c.vocab, size_t(c.vocab));
      kl_base_record(row, std::span<uint16_t>(f.records).subspan(size_t((k * f.positions_per_chunk() + j - first) * nv),
                                                               size_t(nv)));
      const double hi = *std::max_element(row.begin(), row.end());
      double sum = 0;
      for (float l : row) sum += std::exp(double(l) - hi);
      nll += hi + std::log(sum) - double(row[size_t(f.tokens[size_t(k * opt.ctx + j + 1)])]);
    }
    if (::isatty(2)) std::fprintf(stderr, "\rchunk %lld/%d", (long long)(k + 1), f.n_chunk);
  }
  if (::isatty(2)) std::fprintf(stderr, "\n");
  write_kl_base(opt.out, f);
  const int64_t scored = int64_t(f.n_chunk) * f.positions_per_chunk();
  std::printf("wrote %s: %d chunks of %lld tokens, vocabulary %lld, %lld scored positions; backend %s: PPL %.6f\n",
              opt.out.c_str(), f.n_chunk, (long long)opt.ctx, (long long)c.vocab, (long long)scored, backend->name(),
              std::exp(nll / double(std::max<int64_t>(scored, 1))));
  return 0;
}

}  // namespace

Command add_kl_base(CLI::App& app) {
  auto o = std::make_shared<KlBaseOptions>();
  auto* k = app.add_subcommand(
      "kl-base", "Write llama.cpp's --kl-divergence-base file from the truth's logits (llama-perplexity scores a build against it)");
  add_model_options(k, o->model, o->tokens, o->tokens_file);
  k->add_option("--out", o->out, "The file to write")->required();
  k->add_option("--ctx", o->ctx, "Tokens per chunk (llama-perplexity's -c)")->capture_default_str();
  k->add_option("--chunks", o->chunks, "At most this many chunks (default: every whole chunk of the tokens)");
  k->add_option("--bos", o->bos, "The BOS id llama.cpp puts at each chunk's start (when its vocabulary adds one)");
  k->add_option("--backend", o->backend, "ref64 (the truth), ref32 or fast")->capture_default_str();
  k->add_option("--threads", o->threads, "OpenMP threads (default: all)");
  return {k, [o] { return run_kl_base(*o); }};
}

}  // namespace moe::cli
