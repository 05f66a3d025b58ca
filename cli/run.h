#pragma once
#include <cstdint>
#include <string>
#include <vector>

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

struct InspectOptions { std::string file; };
int inspect_dump(const InspectOptions& opt);

struct DiffOptions {
  std::string a, b;
  double threshold = 1e-5;  // max |a-b| / max |a| per tap
};
int diff_dumps(const DiffOptions& opt);

struct FixtureOptions {
  std::string preset = "tiny";
  std::string out;
  std::string format = "mlx";
  uint64_t seed = 1;
};
int make_fixture(const FixtureOptions& opt);

}  // namespace moe
