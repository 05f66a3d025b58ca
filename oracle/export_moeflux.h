// Converts a loaded checkpoint to moeflux/flash-moe artifacts (spec/ops.md §2.1, §2.3), the way
// extract_weights.py and repack_experts.py do: model_weights.bin holds every non-expert tensor
// verbatim (sorted by name, each start padded to 64 bytes; a BF16 A_log widened to F32),
// model_weights.json its manifest (offset, size, shape, dtype, bits for U32) plus the config
// block, and packed_experts/layer_NN.bin the routed experts as 4-bit blobs.
#pragma once
#include <string>

#include "oracle/model.h"

namespace moe {

void export_moeflux(const std::string& src_dir, const std::string& out_dir);

}  // namespace moe
