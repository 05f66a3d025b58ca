// Converts a loaded checkpoint to moeflux/flash-moe artifacts
// (docs/ops/formats.md "model_weights.bin and model_weights.json", "Packed experts",
// "Cogito artifact layout"), the way
// extract_weights.py and repack_experts.py do: model_weights.bin holds every non-expert tensor
// verbatim (sorted by name, each start padded to 64 bytes; a BF16 A_log widened to F32),
// model_weights.json its manifest (offset, size, shape, dtype, bits for U32) plus the config
// block, and packed_experts/layer_NN.bin the routed experts as 4-bit blobs. DeepSeek-V3 is written
// as convert_cogito_v2.py writes Cogito (artifacts/, root/packed_experts/ with layout.json, mlx/;
// files only for MoE layers; oracle/tensor_table.h). The directory is built under a temporary
// name and renamed into place (oracle/atomic_file.h: StagingDir).
#pragma once
#include <string>

#include "oracle/model.h"

namespace moe {

// `source`: the model that model_weights.json names (empty: src_dir).
void export_moeflux(const std::string& src_dir, const std::string& out_dir, const std::string& source = "");
// The same files written into `dir`, an existing (staging) directory; `out_dir` names the export
// in messages. For writers that stage a larger directory themselves (write_synthetic).
void export_moeflux_into(const std::string& src_dir, const std::string& dir, const std::string& out_dir,
                         const std::string& source);

}  // namespace moe
