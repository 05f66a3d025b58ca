// --perf's stream figure (compare/run/perf.h) on the default Vulkan device: how many copies a
// stream rotates through, that every copy computes what the case computes on its own buffers
// (a binding at an offset into a larger buffer included), and that a stream is timed.
#include "compare/run/perf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "vulkan/test_glsl.h"

namespace moe::compare {
namespace {

// y[i] = 2 x[i] + 1 over n floats: x bound at an offset into a larger buffer.
std::span<const uint32_t> affine_spv() {
  static const std::vector<uint32_t> words = test::glsl("affine.comp", R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint n; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) y[i] = 2.0 * x[i] + 1.0;
})");
  return words;
}

TEST(stream, CopiesSpanTheFlushAndStayInTime) {
  const uint64_t mib = uint64_t(1) << 20;
  EXPECT_EQ(stream_copies(28 * mib, 256 * mib, 0.02), 10u);   // ceil(256 / 28): the others evict a copy
  EXPECT_EQ(stream_copies(512 * mib, 256 * mib, 0.2), 1u);    // larger than the span: itself
  EXPECT_EQ(stream_copies(10 * 1024, 256 * mib, 0.005), 64u); // tiny: at most 64 (partly warm)
  EXPECT_EQ(stream_copies(1 * mib, 64 * mib, 5.0), 4u);       // a slow device: 20 ms of runs
  EXPECT_EQ(stream_copies(1 * mib, 64 * mib, 50.0), 1u);      // slower than 20 ms: one
  EXPECT_EQ(stream_copies(0, 64 * mib, 0.0), 1u);  // nothing bound: one
}

TEST(stream, EveryCopyComputesTheCaseOnItsOwnBuffers) {
  vk::Context ctx;
  const uint32_t n = 300;
  const uint64_t align = std::max<uint64_t>(ctx.info().min_storage_buffer_offset_alignment, 4);
  const uint64_t offset = align * ((1024 + align - 1) / align);  // x starts past the buffer's start
  vk::Buffer xs = ctx.make_buffer(offset + n * 4 + 512), y = ctx.make_buffer(n * 4);
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i) * 0.5f - 20.0f;
  xs.fill_u32(0x7FC00BADu);  // outside x's range: a NaN a misplaced binding would read
  xs.upload(x.data(), n * 4, offset);
  y.fill_u32(0u);
  vk::Dispatch d;
  d.label = "affine", d.spirv = affine_spv();
  d.bindings = {{0, &xs, offset, n * 4}, {1, &y, 0, 0}};
  d.push_constants.resize(4);
  std::memcpy(d.push_constants.data(), &n, 4);
  d.groups[0] = (n + 63) / 64;

  const Rotation rot = rotate(ctx, {d}, 3);
  ASSERT_EQ(rot.stream.size(), 3u);
  EXPECT_EQ(bound_bytes({d}), uint64_t(n) * 8);  // x's range and y
  EXPECT_EQ(rot.copies.size(), 4u);  // x and y, twice
  std::set<const vk::Buffer*> outputs;
  for (const vk::Dispatch& c : rot.stream) outputs.insert(c.bindings[1].buffer);
  EXPECT_EQ(outputs.size(), 3u);  // no two copies share an output
  EXPECT_EQ(rot.stream[1].bindings[0].offset, 0u);
  ctx.run(rot.stream);
  for (const vk::Dispatch& c : rot.stream) {
    std::vector<float> got(n);
    c.bindings[1].buffer->download(got.data(), n * 4);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * x[i] + 1.0f) << "element " << i;
  }
}

TEST(stream, TimesTheSequencePerCopy) {
  vk::Context ctx;
  const uint32_t n = 4096;
  vk::Buffer x = ctx.make_buffer(n * 4), y = ctx.make_buffer(n * 4);
  x.fill_u32(0x3F800000u);  // 1.0
  vk::Dispatch d;
  d.label = "affine", d.spirv = affine_spv();
  d.bindings = {{0, &x, 0, 0}, {1, &y, 0, 0}};
  d.push_constants.resize(4);
  std::memcpy(d.push_constants.data(), &n, 4);
  d.groups[0] = n / 64;
  const vk::RunResult once = ctx.run({d});
  if (once.gpu_ms.empty()) GTEST_SKIP() << "the device has no compute timestamps";
  const StreamTiming st = time_stream(ctx, {d}, once.gpu_ms[0], uint64_t(1) << 20, 0, 10000);
  EXPECT_EQ(st.copies, stream_copies(2 * n * 4, uint64_t(1) << 20, once.gpu_ms[0]));
  EXPECT_GT(st.ms, 0);
  EXPECT_LE(st.lo, st.ms);
  EXPECT_GE(st.hi, st.ms);
  EXPECT_EQ(st.cold, uint64_t(st.copies) * 2 * n * 4 >= (uint64_t(1) << 20));
}

}  // namespace
}  // namespace moe::compare
