#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "oracle/tokens.h"  // parse_tokens, read_tokens (--tokens, --tokens-file)

namespace moe {

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

int run_model(const RunOptions& opt);

struct BisectOptions {
  std::string model, kernels, device, tokens, tokens_file;
  std::string mode = "isolated";
  int64_t prefill = 1;
  uint32_t subgroup = 0;
  int64_t experts_per_token = 0;
  std::string qk_norm_eps = "hf";
  std::string case_out = "bisect_case.safetensors";
  std::string html, json;
  uint64_t timeout_ms = 60000;
};
int run_bisect(const BisectOptions& opt);

struct InspectOptions { std::string file; };
int inspect_dump(const InspectOptions& opt);

struct DiffOptions {
  std::string a, b;
  double threshold = 1e-5;  // max |a-b| / max |a| per tap
  std::string map;          // mapping file: B's (another engine's) tensor names -> tap names (oracle/tap_map.h)
};
int diff_dumps(const DiffOptions& opt);

struct FixtureOptions {
  std::string preset = "tiny";
  std::string out;
  std::string format = "mlx";
  uint64_t seed = 1;
  int64_t layers = 0;  // real-shape presets: 0 = the preset's two layers, N = the real model's first N
};
int make_fixture(const FixtureOptions& opt);

}  // namespace moe
