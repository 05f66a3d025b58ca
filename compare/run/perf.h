#pragma once
// --perf, all of it: the cold and warm figures of a case's dispatches (time_repeats), the stream
// figure (a case's dispatches as a decode runs them, back to back behind barriers, each copy
// reading its own inputs, timed around the whole batch: docs/benchmarks.md, "What the figures mean"),
// and the report's device figures (copy bandwidth, FMA peak, a same-size copy per case).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "compare/run/plan.h"
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

// --perf's timing of a sequence that already ran once (r.gpu_ms: that run's time): cold runs, each
// after a cache flush, and warm runs in one submission (perf.cpp); fills r.gpu_ms (the cold
// median) and r.timing, or returns what went wrong.
std::string time_repeats(vk::Context& ctx, const std::vector<vk::Dispatch>& seq, uint64_t timeout_ms, CaseResult& r);

// The cold runs' cache flush: a read of the scratch buffer (default) or, with MOE_PERF_FLUSH=fill,
// a fill of it (the earlier method; records/benchmarks-history.md, "The cold flush").
bool flush_by_read();

// The --perf lines after the console report: every timed case against the device's copy
// bandwidth, FMA peak and a copy of the case's own size.
void write_perf_report(std::ostream& os, const CompareOptions& opt, const std::vector<CaseResult>& results);

}  // namespace moe::compare
