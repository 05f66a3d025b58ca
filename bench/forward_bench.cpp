// forward_bench: decode speed of the oracle's fast backend on a real-shape synthetic model, next to
// the floor set by the bytes each token must read at the memory bandwidth this binary measures.
//
//   forward_bench [--preset a3b-2layers|a17b-2layers|cogito-2layers] [--tokens N] [--prefill P] [--dir DIR] [--threads T]
//
// The model (Qwen: one linear-attention and one full-attention layer; Cogito-V2 / DeepSeek-V3: one
// dense and one MoE MLA layer; at the real shapes, all experts, the real vocabulary) is written
// once to DIR (default build/bench_models/PRESET) by the same generator as `moeoracle fixture`.
// Per token the forward must read at least: every attention projection of each layer, the router,
// the shared expert(s) and the Qwen gate (or the dense MLP), K routed experts, one embedding row
// and the whole lm_head. floor = those bytes / triad bandwidth (all threads).
// Prefill: one forward of P prompt tokens (default 64; 0 skips it) on a fresh state, reported in
// GFLOP/s = 2 x (weights of those same matrices, one multiply-add each per token) x P / time,
// against the f32 FMA peak of the dispatched SIMD target (all threads). Attention's own products
// and the elementwise ops are not counted, so the figure slightly understates the work done.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "bandwidth.h"
#include "fma_peak.h"
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

struct BytesOf {
  int64_t operator()(const moe::QuantMatrix& m) const { return m.bytes(); }
  int64_t operator()(const moe::Weight& w) const { return w.ggml ? int64_t(w.g.bytes()) : w.q.bytes(); }
  int64_t operator()(std::span<const moe::bf16> w) const { return int64_t(w.size()) * 2; }
} bytes_of;
struct WeightsOf {
  int64_t operator()(const moe::QuantMatrix& m) const { return m.rows * m.cols; }
  int64_t operator()(const moe::Weight& w) const { return w.rows() * w.cols(); }
  int64_t operator()(std::span<const moe::bf16> w) const { return int64_t(w.size()); }
} weights_of;

// What one token must touch: `f` summed over every matrix of the per-token set (file comment).
template <class F>
int64_t sum_per_token(const moe::Model& model, int64_t K, F f) {
  const moe::ModelConfig& c = model.config();
  int64_t sum = f(model.lm_head());
  for (int64_t i = 0; i < c.layers; ++i) {
    const moe::LayerWeights& l = model.layer(i);
    if (l.kind == moe::LayerKind::Linear)
      sum += f(l.lin.qkv) + f(l.lin.z) + f(l.lin.a) + f(l.lin.b) + f(l.lin.out);
    else if (l.kind == moe::LayerKind::Mla)
      sum += f(l.mla.q_a) + f(l.mla.q_b) + f(l.mla.kv_a) + f(l.mla.kv_b.mlx) + f(l.mla.o);
    else
      sum += f(l.full.q) + f(l.full.k) + f(l.full.v) + f(l.full.o);
    sum += f(l.mlp.shared.gate) + f(l.mlp.shared.up) + f(l.mlp.shared.down);  // shared expert(s), or the dense MLP
    if (!l.moe) continue;
    const moe::ExpertWeights e = model.expert(i, 0);
    sum += K * (f(e.gate) + f(e.up) + f(e.down));
    // The router: quantized (Qwen, with the shared expert's gate) or BF16 (DeepSeek-V3).
    sum += l.mlp.router_bf16.empty() ? f(l.mlp.router) + f(l.mlp.shared_expert_gate) : f(l.mlp.router_bf16);
  }
  return sum;
}

// One forward of `prompt` tokens on a fresh state (after a warm-up one), against the FMA peak.
void report_prefill(moe::Forward& fwd, const moe::Model& model, int64_t K, int prompt, int threads) {
  const moe::ModelConfig& c = model.config();
  std::vector<int32_t> ids(static_cast<size_t>(prompt));
  for (int t = 0; t < prompt; ++t) ids[size_t(t)] = int32_t((t * 7919 + 3) % c.vocab);
  double best = 1e30;
  for (int rep = 0; rep < 2; ++rep) {  // the first also warms the threads and the touched weights
    moe::ModelState st = moe::ModelState::make(c, prompt + 1);
    const auto t0 = Clock::now();
    fwd.run(ids, st);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  const double flops = 2.0 * double(sum_per_token(model, K, weights_of)) * prompt;
  const double peak = moe::bench::fma_peak_gflops(threads);
  std::printf("prefill %d tokens: %.1f ms = %.1f tokens/s; %.1f GFLOP/s of products, %.1f%% of the FMA peak (%.1f GFLOP/s, %d threads)\n",
              prompt, 1e3 * best, prompt / best, flops / best / 1e9, 100.0 * flops / best / 1e9 / peak, peak, threads);
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "a3b-2layers", dir;
  int tokens = 8, threads = 0, prefill = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--preset") preset = v;
    else if (k == "--tokens") tokens = std::stoi(v);
    else if (k == "--prefill") prefill = std::stoi(v);
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
    const int64_t bytes = sum_per_token(*model, K, bytes_of) + bytes_of(model->embed()) / c.vocab;

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
      const moe::LayerKind k = c.layer_kinds[size_t(i)];
      std::printf("  layer %lld (%s, %s): %.2f ms/token\n", (long long)i,
                  k == moe::LayerKind::Full ? "full attention" : k == moe::LayerKind::Mla ? "MLA" : "linear attention",
                  c.layer_moe[size_t(i)] ? "MoE" : "dense MLP", 1e3 * s);
    }
    std::printf("  embedding + final norm + lm_head: %.2f ms/token\n", 1e3 * (per_token - layers_total));
    if (prefill > 0) report_prefill(fwd, *model, K, prefill, used_threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forward_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
