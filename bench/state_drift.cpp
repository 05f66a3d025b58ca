// state_drift: over a long decode, how far the f32 tier's and the fast tier's recurrent state and
// next-token distributions drift from the f64 truth's: does the error grow with the steps,
// saturate, or blow up? Each step decodes one token (seeded, uniform over the vocabulary: teacher
// forced, the same token in every tier) in all three tiers from their own states.
//
//   state_drift [--preset tiny] [--steps 4096] [--every 256] [--seed 1] [--dir DIR] [--name-above KLD]
//
// Per window of `every` steps: the largest relative error of any linear-attention layer's
// delta-net state, max |S - S_truth| / max |S_truth| over its [Hv, dv, dk] (at the window's last
// step), and the mean and largest KL divergence of the tier's next-token distribution from the
// truth's over the window's steps (oracle/drift.h); each step whose KLD passes --name-above is
// printed on its own line with its token and every MoE layer whose chosen experts differ from the
// truth's (a routing flip: a near-tie of router scores decided the other way). The model is written once to DIR (default
// build/bench_models/PRESET) by `moeoracle fixture`'s generator.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "oracle/backend.h"
#include "oracle/drift.h"
#include "oracle/forward.h"
#include "oracle/model.h"
#include "oracle/synth.h"

namespace {

struct Options {
  std::string preset = "tiny", dir;
  int64_t steps = 4096, every = 256;
  uint64_t seed = 1;
  double name_above = INFINITY;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--preset") o.preset = v;
    else if (k == "--steps") o.steps = std::stoll(v);
    else if (k == "--every") o.every = std::stoll(v);
    else if (k == "--seed") o.seed = std::stoull(v);
    else if (k == "--dir") o.dir = v;
    else if (k == "--name-above") o.name_above = std::stod(v);
    else throw std::runtime_error("state_drift: unknown option " + k);
  }
  if (o.dir.empty()) o.dir = "build/bench_models/" + o.preset;
  return o;
}

// max |a - b| / max |b| over one layer's delta-net state.
double state_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) diff = std::max(diff, std::fabs(double(a[i]) - double(b[i]))), scale = std::max(scale, std::fabs(double(b[i])));
  return scale > 0 ? diff / scale : diff;
}

// The experts each MoE layer chose for the step's token (tap mlp.experts.idx), as sorted sets.
class RoutingSink final : public moe::TapSink {
 public:
  bool wants(const std::string& name) const override { return name.ends_with("mlp.experts.idx"); }
  void put(const std::string&, std::span<const float>, int64_t, int64_t) override {}
  void put_i32(const std::string& name, std::span<const int32_t> data, int64_t, int64_t) override {
    std::vector<int32_t> v(data.begin(), data.end());
    std::sort(v.begin(), v.end());
    chosen[name] = std::move(v);
  }
  std::map<std::string, std::vector<int32_t>> chosen;
};

std::string experts_text(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t e : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(e);
  }
  return "{" + s + "}";
}

struct Tier {
  std::string name;
  RoutingSink routing;
  std::unique_ptr<moe::OpBackend> backend;
  std::unique_ptr<moe::Forward> forward;
  moe::ModelState state;
  double kld_sum = 0, kld_max = 0;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (!std::filesystem::exists(o.dir + "/config.json"))
      moe::write_synthetic_mlx(moe::synthetic_preset(o.preset), 1, o.dir);
    const auto model = moe::Model::load(o.dir);
    const moe::ModelConfig& cfg = model->config();
    std::vector<Tier> tiers;
    for (const char* name : {"ref64", "ref32", "fast"}) {
      Tier t{name, {}, moe::make_cpu_backend(name), nullptr, moe::ModelState::make(cfg, o.steps + 1)};
      t.forward = std::make_unique<moe::Forward>(*model, *t.backend);
      tiers.push_back(std::move(t));
    }
    std::mt19937_64 rng(o.seed);
    std::uniform_int_distribution<int32_t> token(0, int32_t(cfg.vocab - 1));
    std::printf("state_drift: %s (%lld layers, vocabulary %lld), %lld steps, seed %llu\n", o.preset.c_str(),
                (long long)cfg.layers, (long long)cfg.vocab, (long long)o.steps, (unsigned long long)o.seed);
    std::printf("%8s  %14s %12s %12s  %14s %12s %12s\n", "step", "ref32 state", "ref32 KLD", "max", "fast state",
                "fast KLD", "max");
    for (int64_t step = 1; step <= o.steps; ++step) {
      const int32_t tok = token(rng);
      std::vector<std::vector<float>> logits;
      for (Tier& t : tiers) logits.push_back(t.forward->run(std::span<const int32_t>(&tok, 1), t.state, &t.routing));
      for (size_t k = 1; k < tiers.size(); ++k) {
        const double kld = moe::drift_stats(logits[0], logits[k], 1, cfg.vocab, {}).kld_per_row[0];
        tiers[k].kld_sum += kld, tiers[k].kld_max = std::max(tiers[k].kld_max, kld);
        if (kld > o.name_above) {
          std::printf("  step %lld (token %d): %s KLD %.4g", (long long)step, tok, tiers[k].name.c_str(), kld);
          for (const auto& [tap, experts] : tiers[0].routing.chosen)
            if (tiers[k].routing.chosen[tap] != experts)
              std::printf("; %s: truth %s, %s %s", tap.c_str(), experts_text(experts).c_str(), tiers[k].name.c_str(),
                          experts_text(tiers[k].routing.chosen[tap]).c_str());
          std::printf("\n");
        }
      }
      if (step % o.every != 0 && step != o.steps) continue;
      const int64_t window = step % o.every ? step % o.every : o.every;
      std::printf("%8lld", (long long)step);
      for (size_t k = 1; k < tiers.size(); ++k) {
        double err = 0;
        for (size_t l = 0; l < tiers[0].state.layers.size(); ++l)
          if (!tiers[0].state.layers[l].ssm.empty())
            err = std::max(err, state_error(tiers[k].state.layers[l].ssm, tiers[0].state.layers[l].ssm));
        std::printf("  %14.4g %12.4g %12.4g", err, tiers[k].kld_sum / double(window), tiers[k].kld_max);
        tiers[k].kld_sum = 0, tiers[k].kld_max = 0;
      }
      std::printf("\n");
      std::fflush(stdout);  // a long run shows its windows as they finish
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
