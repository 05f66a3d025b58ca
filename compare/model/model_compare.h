// Model-level differential (`moeoracle bisect`): the whole forward on a manifest's kernels
// against the CPU truth, op by op.
//   isolated: every GPU op gets the truth's inputs (GpuBackend with Feed::Truth); every op of
//     every layer at every token is decided with the op's own bound; error never accumulates, so
//     the first failing op in forward order is the culprit.
//   free: the GPU runs on its own outputs (Feed::Gpu); each op is still decided on the inputs it
//     got (sound: the truth is recomputed from exactly those inputs), and per tap, layer and token
//     the drift against a separate truth run of the same tokens is measured.
// The first failing (token, layer, op) is written as a case file (compare/run/case_file.h) that
// `moeoracle compare --case FILE` replays alone.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compare/model/gpu_backend.h"
#include "oracle/forward.h"

namespace moe::compare {

struct ModelCompareOptions {
  std::string model;            // MLX directory or moeflux artifacts
  std::string kernels;          // manifest; "" = bundled
  std::string kernels_root;     // the engine checkout of a manifest with "sources": "kernels_root"
  std::string device;
  std::vector<int32_t> tokens;
  std::string mode = "isolated";  // isolated | free
  int64_t prefill = 1;            // tokens in the first forward call
  int64_t chunk = 1;              // tokens in each later call (1: decoded one at a time)
  uint32_t subgroup = 0;        // 0: the device's default size
  uint64_t timeout_ms = 60000;
  ForwardOptions forward;
  std::string case_out;         // where to write the first failure's case file ("" = none)
  std::string dump;             // free mode: the GPU forward's taps as a dump for `judge` ("" = none)
  std::string truth_dump;       // free mode: the truth run's taps on the same tokens (`drift` against dump)
  std::string mutant;           // "<kernel> <mutant id>" or "<kernel> #<index>": run that mutant of a GLSL kernel
  bool progress = true;         // progress lines on stderr
};

// Drift of one tap in free mode: per token row, |gpu - truth| / |truth| (L2) and the cosine.
struct TapDrift {
  std::string tap;
  int64_t layer = -1;
  std::vector<double> rel, cosine;
};

struct ModelCompareResult {
  std::string model, kernels, device, mode;
  std::string mutant;   // the planted mutant, "<kernel> <mutant id>" ("" = none)
  std::string stopped;  // the forward could not go on after a failure (why; "" = it ran to the end)
  std::vector<int32_t> tokens;
  std::vector<OpRecord> records;  // forward order
  std::vector<TapDrift> drift;    // free mode, forward order
  int64_t first_failure = -1;     // index into records
  std::string case_file;          // written for the first failure ("" if none or not asked)
  int64_t passed = 0, failed = 0, uncovered = 0;
};

ModelCompareResult run_model_compare(const ModelCompareOptions& opt);
// Console summary: per op kind the counts, uncovered ops with reasons, the first failure with its
// evidence and the replay command, and (free) the drift at the last layer and the logits.
void write_model_console(std::ostream& os, const ModelCompareResult& r);

}  // namespace moe::compare
