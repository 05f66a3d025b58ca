// --perf support: the device's copy bandwidth, the ceiling GB/s figures are read against.
#pragma once

#include <cstddef>
#include <vector>

#include "compare/vk/runner.h"

namespace moe::compare {

// A compute kernel copying uvec4s between two buffers of the runner (the memory type the
// kernels under test read). `bytes` is capped at half the device's largest storage buffer.
class CopyKernel {
 public:
  CopyKernel(vk::Context& ctx, size_t bytes);
  double run_ms();  // one copy; its GPU time (0: the queue has no timestamps)
  size_t bytes() const { return bytes_; }

 private:
  vk::Context& ctx_;
  size_t bytes_;
  vk::Buffer a_, b_;
  std::vector<uint32_t> spirv_;  // the dispatch points into it
  vk::Dispatch d_;
};

// GB/s of a 256 MiB copy (read + write), best of at least 5 runs and half a second.
double copy_bandwidth_gbs(vk::Context& ctx);

}  // namespace moe::compare
