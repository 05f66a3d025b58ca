#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "core/check.h"
#include "oracle/dump.h"
#include "oracle/forward.h"
#include "oracle/snapshot.h"
#include "oracle/tokens.h"

namespace moe::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string tokens;       // "1,2,3"
  std::string tokens_file;  // whitespace/comma separated ids
  std::string backend = "fast";
  int64_t experts_per_token = 0;
  std::string dump, taps;   // dump path, comma-separated globs
  std::string snapshot_in, snapshot_out;
  int snapshot_version = 1;
  bool decode = false;      // feed the tokens one at a time instead of one prefill
  int threads = 0;
  std::string qk_norm_eps = "hf";  // "hf" (the truth) or "engine"
  uint64_t seed = 0;        // recorded in the dump metadata
};

// Progress on a terminal: layer and token counts and tokens/s, from the layer-output taps; every
// tap is passed on to the dump (if any).
class ProgressSink final : public TapSink {
 public:
  ProgressSink(TapSink* inner, int64_t layers, int64_t tokens) : inner_(inner), layers_(layers), tokens_(tokens) {}
  bool wants(const std::string& name) const override { return is_layer_out(name) || (inner_ && inner_->wants(name)); }
  void put(const std::string& name, std::span<const float> d, int64_t rows, int64_t cols) override {
    if (is_layer_out(name)) {
      const int64_t layer = std::stoll(name.substr(13)) + 1;
      if (layer == layers_) done_ += rows;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      std::fprintf(stderr, "\rlayer %lld/%lld, tokens %lld/%lld, %.2f tokens/s   ", (long long)layer,
                   (long long)layers_, (long long)done_, (long long)tokens_, s > 0 ? double(done_) / s : 0.0);
    }
    if (inner_ && inner_->wants(name)) inner_->put(name, d, rows, cols);
  }
  void put_i32(const std::string& name, std::span<const int32_t> d, int64_t rows, int64_t cols) override {
    if (inner_ && inner_->wants(name)) inner_->put_i32(name, d, rows, cols);
  }

 private:
  static bool is_layer_out(const std::string& n) {
    return n.rfind("model.layers.", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".out") == 0 &&
           std::count(n.begin(), n.end(), '.') == 3;
  }
  TapSink* inner_;
  int64_t layers_, tokens_, done_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

int run_model(const RunOptions& opt) {
  const std::vector<int32_t> tokens = read_tokens(opt.tokens, opt.tokens_file, "run");
  if (opt.threads > 0) omp_set_num_threads(opt.threads);
  auto model = Model::load(opt.model);
  const ModelConfig& c = model->config();
  check_token_range(tokens, c.vocab, "run");
  auto backend = make_cpu_backend(opt.backend);
  ForwardOptions fo;
  fo.experts_per_tok = opt.experts_per_token;
  fo.qk_norm_eps = opt.qk_norm_eps == "engine" ? QkNormEps::Engine : QkNormEps::Hf;
  Forward fwd(*model, *backend, fo);
  ModelState state = ModelState::make(c, int64_t(tokens.size()));
  if (!opt.snapshot_in.empty()) {
    snapshot_load_file(opt.snapshot_in, c, state, int64_t(tokens.size()));
  }
  std::unique_ptr<DumpSink> dump;
  if (!opt.dump.empty()) dump = std::make_unique<DumpSink>(split_commas(opt.taps));

  std::unique_ptr<ProgressSink> progress;
  if (::isatty(2)) progress = std::make_unique<ProgressSink>(dump.get(), c.layers, int64_t(tokens.size()));
  TapSink* sink = progress ? static_cast<TapSink*>(progress.get()) : dump.get();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits;
  const int64_t start_pos = state.pos;
  if (opt.decode) {
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::vector<float> l = fwd.run(std::span(tokens).subspan(t, 1), state, sink);
      logits.insert(logits.end(), l.begin(), l.end());
    }
  } else {
    logits = fwd.run(tokens, state, sink);
  }
  if (progress) std::fprintf(stderr, "\n");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("model %s (%s, %lld layers), backend %s, K=%lld, %zu tokens from position %lld (%s), %.3f s\n",
              opt.model.c_str(), family_name(c.family), (long long)c.layers, backend->name(),
              (long long)fwd.experts_per_tok(), tokens.size(), (long long)start_pos,
              opt.decode ? "decode" : "prefill", secs);
  std::printf("%6s %8s %8s %12s %12s %12s\n", "pos", "token", "argmax", "max logit", "mean", "std");
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* l = logits.data() + t * size_t(c.vocab);
    int64_t best = 0;
    double sum = 0, sq = 0;
    for (int64_t v = 0; v < c.vocab; ++v) {
      if (l[v] > l[best] || (std::isnan(l[v]) && !std::isnan(l[best]))) best = v;
      sum += l[v], sq += double(l[v]) * l[v];
    }
    const double mean = sum / double(c.vocab);
    std::printf("%6lld %8d %8lld %12.5g %12.5g %12.5g\n", (long long)(start_pos + int64_t(t)), tokens[t],
                (long long)best, l[best], mean, std::sqrt(std::max(0.0, sq / double(c.vocab) - mean * mean)));
  }
  if (dump) {
    std::ostringstream toks;
    for (size_t t = 0; t < tokens.size(); ++t) toks << (t ? "," : "") << tokens[t];
    dump->write(opt.dump, {{"model", opt.model}, {"tokens", toks.str()}, {"backend", backend->name()},
                           {"version", MOE_VERSION}, {"seed", std::to_string(opt.seed)},
                           {"start_pos", std::to_string(start_pos)}, {"experts_per_token", std::to_string(fwd.experts_per_tok())}});
    std::printf("wrote %zu taps to %s\n", dump->size(), opt.dump.c_str());
  }
  if (!opt.snapshot_out.empty()) {
    snapshot_save_file(opt.snapshot_out, c, state, opt.snapshot_version);
    std::printf("wrote snapshot v%d at position %lld to %s\n", opt.snapshot_version, (long long)state.pos,
                opt.snapshot_out.c_str());
  }
  return 0;
}

}  // namespace

void add_model_options(CLI::App* sub, std::string& model, std::string& tokens, std::string& tokens_file) {
  sub->add_option("--model", model, "MLX checkpoint directory, moeflux artifacts directory or llama.cpp GGUF file")->required();
  sub->add_option("--tokens", tokens, "Comma-separated token ids");
  sub->add_option("--tokens-file", tokens_file, "File of token ids (whitespace or commas)");
}

void add_forward_options(CLI::App* sub, ForwardSettings& s) {
  sub->add_option("--experts-per-token", s.experts_per_token, "Routed experts per token (default: the model's)");
  sub->add_option("--qk-norm-eps", s.qk_norm_eps, "hf (the truth) or engine")
      ->check(CLI::IsMember({"hf", "engine"}))
      ->capture_default_str();
}

ForwardOptions forward_options(const ForwardSettings& s) {
  ForwardOptions fo;
  fo.experts_per_tok = s.experts_per_token;
  fo.qk_norm_eps = s.qk_norm_eps == "engine" ? QkNormEps::Engine : QkNormEps::Hf;
  return fo;
}

Command add_run(CLI::App& app) {
  auto ro = std::make_shared<RunOptions>();
  auto* r = app.add_subcommand("run", "Run the model's forward on the CPU; print argmax tokens and logits stats");
  add_model_options(r, ro->model, ro->tokens, ro->tokens_file);
  r->add_option("--backend", ro->backend, "ref64 (the truth), ref32 (engine f32 order) or fast")
      ->check(CLI::IsMember({"ref64", "ref32", "fast"}))
      ->capture_default_str();
  r->add_option("--experts-per-token", ro->experts_per_token, "Routed experts per token (default: the model's)");
  r->add_option("--dump", ro->dump, "Write the selected taps to this safetensors file");
  r->add_option("--taps", ro->taps, "Comma-separated globs of tap names to dump (default: all)");
  r->add_option("--snapshot-in", ro->snapshot_in, "Restore engine state from an MFLX snapshot first");
  r->add_option("--snapshot-out", ro->snapshot_out, "Save the engine state (MFLX) after the run");
  r->add_option("--snapshot-version", ro->snapshot_version, "MFLX version to write (1: C engine, 2: Rust port)")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  r->add_flag("--decode", ro->decode, "Feed the tokens one at a time (decode) instead of one prefill");
  r->add_option("--threads", ro->threads, "Threads for the fast backend (default: all cores)");
  r->add_option("--qk-norm-eps", ro->qk_norm_eps,
                "Linear-attention q/k norm epsilon: hf (l2norm, 1e-6 inside the sum: the truth) or engine (rms_norm "
                "eps 1e-6, as MLX and the engines)")
      ->check(CLI::IsMember({"hf", "engine"}))
      ->capture_default_str();
  r->add_option("--seed", ro->seed, "Seed recorded in the dump metadata");
  return {r, [ro] { return run_model(*ro); }};
}

}  // namespace moe::cli
