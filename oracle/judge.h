// judge: per-module verdicts on an engine's own forward, from its dump (docs/judge.md).
//
// The engine's tapped tensors (our tap names, or mapped from its names with a TapMap) are replayed
// through our forward: at every tap whose buffer the forward reads on (Forward::feed), the forward
// continues with the engine's values. So the module between two tapped points runs on the engine's
// own inputs and its own history (its tapped k / v enter the KV cache, its tapped projections the
// conv and delta-net state), and drift inherited from earlier modules never fails a later one.
//
// Every tapped point the engine dumped is judged, token by token, by one rule (the calibrated one):
// the replay is run twice on the same engine inputs, with the truth (ref64) and with an honest f32
// implementation (ref32, the engines' order). Per token t and element i:
//   |engine_i - truth_i| <= multiple * max(err_honest(t), rel * max|truth(t)|) + ulp_P(truth_i)
// err_honest(t): max over the row of |honest - truth|; rel: the largest err_honest / max|truth|
// over the tap's tokens, at least 2^-24 (one token's honest error is one sample, and a short row,
// e.g. a scalar gate, may round exactly by chance); ulp_P: one unit in the last place of the
// engine's declared storage (f32, f16 or bf16: 2^-23, 2^-10, 2^-7 relative; below the smallest
// normal its fixed spacing, f16's 2^-24), for its own rounding of a value that may sit across a
// rounding boundary from the truth's. The multiple (default 16)
// is the calibrated allowance for another honest order of the same sums: see docs/judge.md for
// its calibration (no false alarm over the fixtures and 100 token seeds) and what it cannot see.
// Routing (mlp.experts.idx): each token's expert set must equal the truth's on the engine's router
// logits, except where the swapped experts' scores are within the same allowance (a near-tie); the
// weights are judged in expert order where the sets agree.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "oracle/forward.h"
#include "oracle/model.h"
#include "oracle/safetensors.h"
#include "oracle/tap_map.h"

namespace moe {

enum class Storage { F32, F16, BF16 };
Storage parse_storage(const std::string& s);  // "f32", "f16", "bf16"; else moe::Error
const char* storage_name(Storage s);
double storage_unit_roundoff(Storage s);
float round_to_storage(float v, Storage s);

// An engine's tensors as our taps: values [tokens, cols] row-major; `present[t]` whether the engine
// gave token t's row (an engine may dump one tensor per decode step).
struct EngineTap {
  int64_t cols = 0;
  std::vector<float> values;
  std::vector<char> present;
  std::vector<std::string> sources;  // the engine tensors it came from
};
struct EngineTaps {
  int64_t tokens = 0;
  std::map<std::string, EngineTap> taps;
  std::vector<std::string> unmapped;  // the engine's tensors no rule of the map names
};
// `map` null: the file's names are our taps. Throws moe::Error naming the file and tensor when a
// tensor's size does not fit [tokens, cols] (or one row of it), or two tensors disagree on cols.
EngineTaps engine_taps(const SafetensorsFile& f, const TapMap* map, int64_t tokens);

struct JudgeOptions {
  Storage storage = Storage::F32;  // how the engine keeps the tensors it dumped
  double multiple = 16;            // the calibrated allowance (docs/judge.md)
  ForwardOptions forward;          // experts per token, q/k norm eps: as the engine runs
};

struct ModuleVerdict {
  std::string tap;
  int64_t layer = -1;              // model.layers.N.*: N; else -1
  bool fed = false;                // the forward went on with the engine's values here
  std::vector<double> err, bound;  // per token, at its worst element (-1: not judged)
  int64_t judged = 0, failed = 0;  // tokens
  int64_t first_failed_token = -1;
  double worst_ratio = 0;  // max err / bound over the judged tokens
  std::string note;        // routing: near-ties accepted, weights not judged, ...
};

struct JudgeReport {
  std::vector<ModuleVerdict> modules;  // in forward order
  int64_t first_failed = -1;           // index into modules
  int64_t tokens = 0;
  Storage storage = Storage::F32;
  double multiple = 0;
  std::vector<std::string> not_judged;  // engine taps our forward never reached (name, why)
  std::vector<std::string> unmapped;
};

// Replays `tokens` (from position 0) with the engine's taps fed in, judges every tapped point.
JudgeReport judge_engine(const Model& model, std::span<const int32_t> tokens, const EngineTaps& engine,
                         const JudgeOptions& opt);

// From files, as `moeoracle judge` and the Python module call it: the model (any format
// Model::load reads), the engine's dump, its map ("" = our tap names). `tokens` empty: the dump's
// "tokens" tensor or metadata. A dump whose start_pos metadata is not 0 is refused (the replay
// starts from an empty state).
JudgeReport judge_dump(const std::string& model, const std::string& dump, std::vector<int32_t> tokens,
                       const std::string& map, const JudgeOptions& opt);

// The report as JSON: tokens, storage, multiple, first_failed (the tap, or null), modules (tap,
// layer, fed, judged, failed, first_failed_token, worst_ratio, err and bound per token, note),
// not_judged, unmapped. A non-finite number is the string "inf".
std::string judge_report_json(const JudgeReport& rep);

// The report as one self-contained HTML page (oracle/judge_html.cpp): a row per module, a cell per
// token coloured by error / bound, the first failure on top. `title` names the run (the dump).
std::string judge_report_html(const JudgeReport& rep, const std::string& title);

}  // namespace moe
