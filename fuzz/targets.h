// The fuzz targets: one function per input format, fed one input's bytes. A target returns, or
// throws moe::Error for a bad input; anything else — another exception, a crash, a sanitizer
// report, a leak, a hang — is a bug. The libFuzzer harness (fuzz/harness.cpp, per format) and the
// regression test of the normal build (tests/fuzz/regressions_test.cpp) both call these, so a
// finding replays through the same entry points with either compiler. docs/fuzzing.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace moe::fuzz {

using Target = void (*)(const uint8_t* data, size_t size);

struct TargetInfo {
  const char* format;  // the corpus folder fuzz/corpus/<format>, tests/fuzz_regressions/<format>
  Target run;
  void (*prepare)();   // makes the fixtures the target needs (before the first input), or nullptr
};

std::span<const TargetInfo> targets();
const TargetInfo& find_target(const std::string& format);  // moe::Error for an unknown one
// The target's fixtures made now: the harness calls it from LLVMFuzzerInitialize so that the
// seconds they take are not charged to the first input (-timeout).
void prepare(const std::string& format);

// A safetensors file (oracle/safetensors.h), every tensor's values read.
void safetensors(const uint8_t* data, size_t size);
// A GGUF file (oracle/gguf.h): every metadata value summarised, every tensor's bytes read and the
// values of the types core/ggml_blocks.h decodes.
void gguf(const uint8_t* data, size_t size);
// A GGUF model file (oracle/model_gguf.cpp): loads it, views every routed expert, runs one token.
void gguf_model(const uint8_t* data, size_t size);
// An MLX checkpoint directory: config.json [@@ model.safetensors.index.json], over fixed valid
// shards (support.h); loaded, every expert viewed, one token run.
void mlx_model(const uint8_t* data, size_t size);
// moeflux artifacts: model_weights.json [@@ model_weights.bin [@@ packed_experts/layer_00.bin
// [@@ layer_01.bin ...]]]; a file not given is the small model's. Loaded and run like mlx_model.
void moeflux(const uint8_t* data, size_t size);
// An MFLX snapshot (v1/v2) restored into the small model, which then runs one token; a restored
// state saved again must give the input's bytes.
void snapshot(const uint8_t* data, size_t size);
// A `diff --map` file [@@ engine name [@@ engine name ...]], every name mapped.
void tap_map(const uint8_t* data, size_t size);
// `diff`: dump A @@ dump B [@@ map file].
void dump_diff(const uint8_t* data, size_t size);
// A --tokens-file.
void tokens(const uint8_t* data, size_t size);
// A kernel manifest (next to the bundled kernels' .spv files); every kernel made concrete
// for a case of its op and its bindings laid out (no Vulkan).
void manifest(const uint8_t* data, size_t size);
// One manifest expression: checked, evaluated over fixed variables, as a limit, its names.
void expr(const uint8_t* data, size_t size);
// A case file (compare --case), every output decided against its own input words.
void case_file(const uint8_t* data, size_t size);

void prepare_models();     // support.h fixtures()
void prepare_manifests();  // the kernels' folder, a case of every op

}  // namespace moe::fuzz
