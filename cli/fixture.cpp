// `moeoracle fixture`: a deterministic synthetic model in MLX or moeflux format.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "oracle/synth.h"

namespace moe::cli {
namespace {

struct FixtureOptions {
  std::string preset = "tiny";
  std::string out;
  std::string format = "mlx";
  uint64_t seed = 1;
  int64_t layers = 0;  // real-shape presets: 0 = the preset's two layers, N = the real model's first N
};

int make_fixture(const FixtureOptions& opt) {
  const ModelConfig cfg = synthetic_preset(opt.preset, opt.layers);
  write_synthetic(cfg, opt.seed, opt.out, opt.format);
  std::printf("wrote %s fixture '%s' (seed %llu, %lld layers, hidden %lld, %lld experts) to %s\n", opt.format.c_str(),
              opt.preset.c_str(), (unsigned long long)opt.seed, (long long)cfg.layers, (long long)cfg.hidden,
              (long long)cfg.experts, opt.out.c_str());
  return 0;
}

}  // namespace

Command add_fixture(CLI::App& app) {
  auto fo = std::make_shared<FixtureOptions>();
  auto* f = app.add_subcommand("fixture", "Write a deterministic synthetic model (MLX, moeflux or GGUF format)");
  f->add_option("--preset", fo->preset,
                "tiny, a3b-2layers, a17b-2layers (Qwen), ds3-tiny or cogito-2layers (DeepSeek-V3 / Cogito-V2 shapes)")
      ->capture_default_str();
  f->add_option("--out", fo->out, "Output directory")->required();
  f->add_option("--format", fo->format, "mlx, moeflux or gguf (a file: llama.cpp's qwen35moe / qwen3next / deepseek2 layout)")->check(CLI::IsMember({"mlx", "moeflux", "gguf"}))->capture_default_str();
  f->add_option("--seed", fo->seed, "Seed")->capture_default_str();
  f->add_option("--layers", fo->layers,
                "a3b-/a17b-/cogito-2layers: the real model's first N layers instead of the two (linear + full, or "
                "dense + MoE) (a model larger than memory: docs/resources.md)");
  return {f, [fo] { return make_fixture(*fo); }};
}

}  // namespace moe::cli
