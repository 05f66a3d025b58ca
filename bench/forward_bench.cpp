// forward_bench: decode speed of the oracle's fast backend on a real-shape synthetic model, next to
// the floor set by the bytes each token must read at the memory bandwidth this binary measures.
//
//   forward_bench [--preset a3b-2layers|a17b-2layers] [--tokens N] [--dir DIR] [--threads T]
//
// The model (one linear-attention and one full-attention layer at the real shapes, all experts,
// the real vocabulary) is written once to DIR (default build/bench_models/PRESET) by the same
// generator as `moeoracle fixture`. Per token the forward must read at least: every attention
// projection of each layer, the router, the shared expert and its gate, K routed experts, one
// embedding row and the whole lm_head. floor = those bytes / triad bandwidth (all threads).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "bandwidth.h"
#include "oracle/forward.h"
#include "oracle/synth.h"

namespace {

using Clock = std::chrono::steady_clock;

// Records the time at which each layer's output tap arrives: per-layer wall time per token.
class LayerClock final : public moe::TapSink {
 public:
  explicit LayerClock(int64_t layers) : seconds(size_t(layers), 0.0) {}
  void start() { last_ = Clock::now(); }
  bool wants(const std::string& name) const override {
    return name.rfind("model.layers.", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".out") == 0 &&
           std::count(name.begin(), name.end(), '.') == 3;
  }
  void put(const std::string& name, std::span<const float>, int64_t, int64_t) override {
    const auto now = Clock::now();
    const int64_t layer = std::stoll(name.substr(13));
    seconds[size_t(layer)] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  void put_i32(const std::string&, std::span<const int32_t>, int64_t, int64_t) override {}
  std::vector<double> seconds;

 private:
  Clock::time_point last_;
};

int64_t bytes_of(const moe::QuantMatrix& m) { return m.bytes(); }

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "a3b-2layers", dir;
  int tokens = 8, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--preset") preset = v;
    else if (k == "--tokens") tokens = std::stoi(v);
    else if (k == "--dir") dir = v;
    else if (k == "--threads") threads = std::stoi(v);
    else { std::fprintf(stderr, "unknown option %s\n", k.c_str()); return 2; }
  }
  if (dir.empty()) dir = "build/bench_models/" + preset;
  try {
    if (!std::filesystem::exists(dir + "/config.json")) {
      std::printf("writing the %s model to %s (once)...\n", preset.c_str(), dir.c_str());
      std::fflush(stdout);
      moe::write_synthetic_mlx(moe::synthetic_preset(preset), 1, dir);
    }
    if (threads > 0) omp_set_num_threads(threads);
    const int used_threads = threads > 0 ? threads : omp_get_max_threads();
    auto model = moe::Model::load(dir);
    const moe::ModelConfig& c = model->config();
    auto be = moe::make_cpu_backend("fast");
    moe::Forward fwd(*model, *be);
    const int64_t K = fwd.experts_per_tok();

    // Bytes a token must read.
    int64_t bytes = bytes_of(model->lm_head()) + model->embed().bytes() / c.vocab;
    for (int64_t i = 0; i < c.layers; ++i) {
      const moe::LayerWeights& l = model->layer(i);
      if (l.kind == moe::LayerKind::Linear)
        bytes += bytes_of(l.lin.qkv) + bytes_of(l.lin.z) + bytes_of(l.lin.a) + bytes_of(l.lin.b) + bytes_of(l.lin.out);
      else
        bytes += bytes_of(l.full.q) + bytes_of(l.full.k) + bytes_of(l.full.v) + bytes_of(l.full.o);
      const moe::ExpertWeights e = model->expert(i, 0);
      bytes += bytes_of(l.mlp.router) + bytes_of(l.mlp.shared_expert_gate) + bytes_of(l.mlp.shared.gate) +
               bytes_of(l.mlp.shared.up) + bytes_of(l.mlp.shared.down) +
               K * (bytes_of(e.gate) + bytes_of(e.up) + bytes_of(e.down));
    }

    moe::ModelState st = moe::ModelState::make(c, tokens + 1);
    LayerClock clock(c.layers);
    const std::vector<int32_t> ids{17};
    fwd.run(ids, st);  // warm-up token: page the touched weights in, start the thread pools
    std::fill(clock.seconds.begin(), clock.seconds.end(), 0.0);
    const auto t0 = Clock::now();
    for (int t = 0; t < tokens; ++t) {
      const std::vector<int32_t> tok{int32_t((t * 7919 + 3) % c.vocab)};
      clock.start();
      fwd.run(tok, st, &clock);
    }
    const double per_token = std::chrono::duration<double>(Clock::now() - t0).count() / tokens;
    const double bw = moe::bench::triad_gbs(used_threads);
    const double floor = double(bytes) / (bw * 1e9);

    std::printf("preset %s: %lld layers, hidden %lld, %lld experts (K=%lld), vocab %lld; %d decode tokens, %d threads\n",
                preset.c_str(), (long long)c.layers, (long long)c.hidden, (long long)c.experts, (long long)K,
                (long long)c.vocab, tokens, used_threads);
    std::printf("bytes read per token (lower bound): %.1f MB\n", double(bytes) / 1e6);
    std::printf("triad bandwidth (all threads, 4 streams): %.1f GB/s -> floor %.2f ms/token\n", bw, 1e3 * floor);
    std::printf("fast backend: %.2f ms/token = %.2f tokens/s, %.0f%% of the floor's speed (%.1f GB/s effective)\n",
                1e3 * per_token, 1.0 / per_token, 100.0 * floor / per_token, double(bytes) / per_token / 1e9);
    double layers_total = 0;
    for (int64_t i = 0; i < c.layers; ++i) {
      const double s = clock.seconds[size_t(i)] / tokens;
      layers_total += s;
      std::printf("  layer %lld (%s): %.2f ms/token\n", (long long)i,
                  c.layer_kinds[size_t(i)] == moe::LayerKind::Full ? "full attention" : "linear attention", 1e3 * s);
    }
    std::printf("  embedding + final norm + lm_head: %.2f ms/token\n", 1e3 * (per_token - layers_total));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forward_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
