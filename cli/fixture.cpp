// `moeoracle fixture`: a deterministic synthetic model in MLX or moeflux format.
#include <cstdio>
#include <filesystem>

#include "core/check.h"
#include "oracle/export_moeflux.h"
#include "oracle/synth.h"
#include "run.h"

namespace moe {

int make_fixture(const FixtureOptions& opt) {
  const ModelConfig cfg = synthetic_preset(opt.preset, opt.layers);
  MOE_CHECK(opt.format == "mlx" || opt.format == "moeflux", "fixture: format '" << opt.format << "', expected mlx or moeflux");
  if (opt.format == "mlx") {
    write_synthetic_mlx(cfg, opt.seed, opt.out);
  } else {
    const std::string tmp = opt.out + ".mlx-tmp";
    write_synthetic_mlx(cfg, opt.seed, tmp);
    export_moeflux(tmp, opt.out);
    std::filesystem::remove_all(tmp);
  }
  std::printf("wrote %s fixture '%s' (seed %llu, %lld layers, hidden %lld, %lld experts) to %s\n", opt.format.c_str(),
              opt.preset.c_str(), (unsigned long long)opt.seed, (long long)cfg.layers, (long long)cfg.hidden,
              (long long)cfg.experts, opt.out.c_str());
  return 0;
}

}  // namespace moe
