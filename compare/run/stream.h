#pragma once
// --perf's stream figure: a case's dispatches as a decode runs them, back to back behind barriers,
// each copy reading its own inputs, timed around the whole batch (docs/benchmarks.md, "What the
// figures mean").
#include <cstdint>
#include <vector>

#include "compare/vk/runner.h"

namespace moe::compare {

struct StreamTiming {
  double ms = -1, lo = -1, hi = -1;  // per copy of the sequence: median, fastest, slowest batch
  uint32_t copies = 0;               // K: copies of the inputs the batch rotates through
  bool cold = false;                 // K copies span the flush size: no copy's inputs left in cache
};

// The bytes of the buffer ranges `seq` binds (each buffer's [first offset, last end)): one copy.
uint64_t bound_bytes(const std::vector<vk::Dispatch>& seq);

// How many copies a stream rotates through: enough that the K - 1 others (`bytes` each) evict a
// copy's inputs before its next turn (`span`, the cold flush's size) and at most 64; fewer where
// K runs of `once_ms` would exceed 20 ms (a slow device, lavapipe). At least 1.
uint32_t stream_copies(uint64_t bytes, uint64_t span, double once_ms);

// `seq` k times over: copy 0 on its own buffers, copy j >= 1 on fresh buffers holding what the
// ranges `seq` binds held (offsets moved to each range's start), so that each copy computes what
// `seq` computes on inputs no other copy touches. `stream` points into `copies`: keep them together.
struct Rotation {
  std::vector<vk::Buffer> copies;
  std::vector<vk::Dispatch> stream;
};
Rotation rotate(vk::Context& ctx, const std::vector<vk::Dispatch>& seq, uint32_t k);

// Times `seq` (which ran once in `once_ms`) as a stream: K copies of every buffer range it binds
// (contents copied), the K sequences concatenated (a barrier between consecutive dispatches, as
// record_copy puts them), run as 3..25 timed batches in one submission after `warmup` fills.
// Throws moe::Error from the runner.
StreamTiming time_stream(vk::Context& ctx, const std::vector<vk::Dispatch>& seq, double once_ms, uint64_t span,
                         uint32_t warmup, uint64_t timeout_ms);

}  // namespace moe::compare
