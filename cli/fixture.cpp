// `moeoracle fixture`: a deterministic synthetic model in MLX or moeflux format.
#include <cstdio>

#include "oracle/synth.h"
#include "run.h"

namespace moe {

int make_fixture(const FixtureOptions& opt) {
  const ModelConfig cfg = synthetic_preset(opt.preset, opt.layers);
  write_synthetic(cfg, opt.seed, opt.out, opt.format);
  std::printf("wrote %s fixture '%s' (seed %llu, %lld layers, hidden %lld, %lld experts) to %s\n", opt.format.c_str(),
              opt.preset.c_str(), (unsigned long long)opt.seed, (long long)cfg.layers, (long long)cfg.hidden,
              (long long)cfg.experts, opt.out.c_str());
  return 0;
}

}  // namespace moe
