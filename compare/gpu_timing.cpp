#include "compare/gpu_timing.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "compare/manifest.h"

namespace moe::compare {

CopyKernel::CopyKernel(vk::Context& ctx, size_t bytes)
    : ctx_(ctx),
      bytes_(std::min<size_t>(bytes, size_t(ctx.info().max_storage_buffer_range) / 2) & ~size_t(15)),
      a_(ctx.make_buffer(bytes_)),
      b_(ctx.make_buffer(bytes_)) {
  const char* src = R"(#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer A { uvec4 a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer B { uvec4 b[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
  for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += gl_NumWorkGroups.x * 256u) b[i] = a[i];
}
)";
  KernelEntry k;
  k.name = "copy_bandwidth";
  a_.fill_u32(1u);
  const uint32_t n = uint32_t(bytes_ / 16);
  spirv_ = compile_glsl(src, "copy_bandwidth.comp", k);
  d_.label = "copy_bandwidth", d_.spirv = spirv_;
  d_.bindings = {{0, &a_, 0, bytes_}, {1, &b_, 0, bytes_}};
  d_.push_constants.resize(4);
  std::memcpy(d_.push_constants.data(), &n, 4);
  d_.groups[0] = std::min<uint32_t>((n + 255) / 256, 65535u);
}

double CopyKernel::run_ms() {
  const vk::RunResult rr = ctx_.run({d_}, 60000);
  return rr.gpu_ms.empty() ? 0.0 : rr.gpu_ms[0];
}

double copy_bandwidth_gbs(vk::Context& ctx) {
  CopyKernel k(ctx, size_t(256) << 20);
  double best = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5 || std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500); ++i) {
    const double ms = k.run_ms();
    if (ms <= 0) return 0;
    best = std::max(best, 2.0 * double(k.bytes()) / (ms * 1e6));
  }
  return best;
}

}  // namespace moe::compare
