// The Vulkan runner on whatever device the machine has (lavapipe in CI): dispatch with push
// and specialization constants, guard regions, barriers between dispatches, every subgroup
// size, the timeout, device selection and the errors for bad input. Skipped, with the reason,
// only when the machine has no Vulkan device at all.
//
// The test shaders are GLSL, compiled at test time by the manifest layer's shaderc path.
#include "compare/vk/runner.h"

#include <gtest/gtest.h>
#include <vulkan/vulkan_core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compare/manifest/manifest.h"
#include "vulkan/test_glsl.h"
#include "test_util.h"

namespace moe::vk {
namespace {

using test::glsl;

// A pipeline the driver does not build is the case's fault, not the device's (seen: NVIDIA's
// ErrorUnknown on an access-checked iq4_xs shader, which an isolated run took for a dying worker
// three times and then stopped running the kernel's cases); a lost device stays a device fault.
TEST(runner, PipelineBuildFailuresArePlanErrors) {
  try {
    throw_pipeline_build_error(VK_ERROR_UNKNOWN, "vkCreateComputePipelines: ErrorUnknown", "mul_mat_vec_iq4_xs", true);
    FAIL() << "nothing thrown";
  } catch (const PlanError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("could not build the pipeline of mul_mat_vec_iq4_xs with moeoracle's access checks"),
              std::string::npos) << m;
    EXPECT_NE(m.find("ErrorUnknown"), std::string::npos) << m;
  }
  EXPECT_THROW(throw_pipeline_build_error(VK_ERROR_OUT_OF_DEVICE_MEMORY, "out of memory", "k", false), PlanError);
  try {
    throw_pipeline_build_error(VK_ERROR_DEVICE_LOST, "device lost", "k", false);
    FAIL() << "nothing thrown";
  } catch (const PlanError&) {
    FAIL() << "a lost device taken for a plan error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device lost"), std::string::npos);
  }
}

// add.comp
std::span<const uint32_t> add_spv() {
  static const std::vector<uint32_t> words = glsl("add.comp", R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint n; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) y[i] = a[i] + b[i];
})");
  return words;
}

// oob.comp
std::span<const uint32_t> off_by_one_spv() {
  static const std::vector<uint32_t> words = glsl("oob.comp", R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint n; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i <= n) y[i] = 1.0;  // off by one: writes y[n]
})");
  return words;
}

// spec.comp
std::span<const uint32_t> spec_spv() {
  static const std::vector<uint32_t> words = glsl("spec.comp", R"(#version 450
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint SCALE = 1;
layout(constant_id = 1) const float OFFSET = 0.0;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint n; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) y[i] = x[i] * float(SCALE) + OFFSET;
})");
  return words;
}

// reduce.comp
std::span<const uint32_t> subgroup_sum_spv() {
  static const std::vector<uint32_t> words = glsl("reduce.comp", R"(#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer S { float s[]; };     // per invocation: its subgroup's sum
layout(set = 0, binding = 2) writeonly buffer G { uint group[]; };  // per invocation: a global subgroup id
layout(set = 0, binding = 3) writeonly buffer Z { uint size[]; };   // per invocation: gl_SubgroupSize
void main() {
  uint i = gl_GlobalInvocationID.x;
  s[i] = subgroupAdd(x[i]);
  group[i] = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  size[i] = gl_SubgroupSize;
})");
  return words;
}

// spin.comp
std::span<const uint32_t> spin_spv() {
  static const std::vector<uint32_t> words = glsl("spin.comp", R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform PC { uint outer; uint inner; };
// Two nested loops: lavapipe ends any single loop after 65535 iterations.
void main() {
  uint acc = 0u;
  for (uint i = 0u; i < outer; ++i)
    for (uint k = 0u; k < inner; ++k) acc = acc * 1664525u + 1013904223u + k;
  y[0] = acc;
})");
  return words;
}

// uninit.comp: y[0..4] from locals, written or not (mode 1 forgets the accumulator's zero, mode 2
// one element of a private array, mode 3 an integer index, mode 4 the last element of an array
// sized by a specialization constant, mode 0 is correct).
std::span<const uint32_t> uninit_spv() {
  static const std::vector<uint32_t> words = glsl("uninit.comp", R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint mode; };
float g[2];  // a Private global, written below only in mode 0
layout(constant_id = 0) const uint N = 8;
void main() {
  float tile[N];
  for (uint t = 0u; t < (mode == 4u ? N - 1u : N); ++t) tile[t] = 0.5;
  float acc;
  if (mode != 1u) acc = 0.0;
  for (uint k = 0u; k < 4u; ++k) acc += a[k];
  float part[3];
  for (uint r = (mode == 2u ? 1u : 0u); r < 3u; ++r) part[r] = a[r];
  uint idx;
  if (mode != 3u) idx = 1u;
  if (mode == 0u) g[1] = 5.0;
  y[0] = acc;
  y[1] = part[0];
  y[2] = idx < 4u ? a[idx] : -1.0;
  y[3] = mode == 0u ? g[1] : 0.0;
  y[4] = tile[N - 1u];
})");
  return words;
}

template <class... T>
std::vector<uint8_t> push(T... values) {
  std::vector<uint8_t> bytes;
  ((bytes.resize(bytes.size() + sizeof(T)), std::memcpy(bytes.data() + bytes.size() - sizeof(T), &values, sizeof(T))),
   ...);
  return bytes;
}

template <class T>
std::vector<T> read(const Buffer& b) {
  std::vector<T> v(b.size() / sizeof(T));
  b.download(v.data(), v.size() * sizeof(T));
  return v;
}

template <class T>
Buffer make_filled(Context& ctx, const std::vector<T>& v) {
  Buffer b = ctx.make_buffer(v.size() * sizeof(T));
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>(i % 1000);
  return v;
}

// A poisoned output (0x7FC00BAD is a NaN): an element the kernel skips cannot pass.
constexpr uint32_t kPoison = 0x7FC00BADu;

uint32_t div_up(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// One dispatch (Dispatch has no constructor; designated initializers that skip members warn).
Dispatch dispatch(std::string label, std::span<const uint32_t> spirv, std::vector<Binding> bindings,
                  std::vector<uint8_t> push_constants = {}, uint32_t groups_x = 1) {
  Dispatch d;
  d.label = std::move(label);
  d.spirv = spirv;
  d.bindings = std::move(bindings);
  d.push_constants = std::move(push_constants);
  d.groups[0] = groups_x;
  return d;
}

class VulkanRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    if (list_devices().empty())
      GTEST_SKIP() << "no Vulkan device on this machine (install mesa-vulkan-drivers for lavapipe)";
    ctx = std::make_unique<Context>();
  }
  std::unique_ptr<Context> ctx;
};

TEST_F(VulkanRunner, ListsDevicesWithConsistentProperties) {
  const std::vector<DeviceInfo> devs = list_devices();
  for (size_t i = 0; i < devs.size(); ++i) {
    const DeviceInfo& d = devs[i];
    EXPECT_EQ(d.index, static_cast<int>(i));
    EXPECT_FALSE(d.name.empty());
    EXPECT_TRUE(d.type == "cpu" || d.type == "discrete" || d.type == "integrated" || d.type == "virtual" ||
                d.type == "other");
    if (d.api_version < VK_API_VERSION_1_1) continue;
    const std::vector<uint32_t> sizes = d.subgroup_sizes();
    ASSERT_FALSE(sizes.empty()) << d.name;
    EXPECT_NE(std::find(sizes.begin(), sizes.end(), d.subgroup_size), sizes.end()) << d.name;
    EXPECT_EQ(sizes.front(), d.min_subgroup_size);
    EXPECT_EQ(sizes.back(), d.max_subgroup_size);
    EXPECT_GT(d.max_storage_buffer_range, 0u);
  }
  // The default choice is a discrete GPU when there is one, else the lowest index of the best kind.
  const bool any_discrete =
      std::any_of(devs.begin(), devs.end(), [](const DeviceInfo& d) { return d.type == "discrete"; });
  if (any_discrete) {
    EXPECT_EQ(ctx->info().type, "discrete");
  }
}

TEST_F(VulkanRunner, AddsWithPushConstantAndBoundsCheck) {
  // 1000 elements in 16 groups of 64: the last 24 invocations must skip, or they write the guard.
  const uint32_t n = 1000;
  Buffer a = make_filled(*ctx, ramp(n, 0.25f, -7.0f)), b = make_filled(*ctx, ramp(n, -1.5f, 3.0f));
  Buffer y = ctx->make_buffer(n * sizeof(float));
  y.fill_u32(kPoison);
  const RunResult r = ctx->run({dispatch("add", add_spv(), {{0, &a}, {1, &b}, {2, &y}}, push(n), div_up(n, 64))});
  const std::vector<float> av = read<float>(a), bv = read<float>(b), yv = read<float>(y);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(yv[i]), std::bit_cast<uint32_t>(av[i] + bv[i])) << i;
  EXPECT_TRUE(a.guard_intact() && b.guard_intact() && y.guard_intact());
  EXPECT_GT(r.wall_ms, 0.0);
  if (ctx->info().timestamp_period_ns > 0) {
    ASSERT_EQ(r.gpu_ms.size(), 1u);
    EXPECT_GE(r.gpu_ms[0], 0.0);
    EXPECT_LT(r.gpu_ms[0], r.wall_ms + 1.0);  // + 1 ms: the two clocks are sampled at different moments
  } else {
    EXPECT_TRUE(r.gpu_ms.empty());
  }
}

// A Repeat runs the sequence cold + warm times in one submission (a counter the kernel bumps
// once per copy ends at cold + warm, two dispatches per copy ordered by the barrier between them),
// and reports one time per copy, cold ones first.
TEST_F(VulkanRunner, RepeatRunsEveryCopyAndTimesEach) {
  static const std::vector<uint32_t> bump = glsl("bump.comp", R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer C { uint c[]; };
layout(push_constant) uniform PC { uint k; };
void main() { c[k] = c[k] + c[1 - k] + 1u; })");
  Buffer c = ctx->make_buffer(8);
  c.fill_u32(0);
  const Repeat rep{.cold = 3, .warm = 4, .flush_bytes = 1 << 20, .warmup = 0, .flush_reader = {}};
  const RunResult r = ctx->run({dispatch("bump0", bump, {{0, &c}}, push(0), 1), dispatch("bump1", bump, {{0, &c}}, push(1), 1)},
                               10000, rep);
  // Per copy: c0 += c1 + 1, then c1 += c0 + 1 (sees the new c0 only if the barrier holds).
  uint32_t c0 = 0, c1 = 0;
  for (int i = 0; i < 7; ++i) c0 += c1 + 1, c1 += c0 + 1;
  const std::vector<uint32_t> cv = read<uint32_t>(c);
  EXPECT_EQ(cv[0], c0);
  EXPECT_EQ(cv[1], c1);
  EXPECT_TRUE(c.guard_intact());
  EXPECT_TRUE(r.gpu_ms.empty());
  if (ctx->info().timestamp_period_ns > 0) {
    ASSERT_EQ(r.cold_ms.size(), 3u);
    ASSERT_EQ(r.warm_ms.size(), 4u);
    for (double t : r.cold_ms) EXPECT_GE(t, 0.0);
    for (double t : r.warm_ms) EXPECT_GE(t, 0.0);
  }
  // Without a Repeat, one copy as before.
  c.fill_u32(0);
  const RunResult once = ctx->run({dispatch("bump0", bump, {{0, &c}}, push(0), 1)});
  EXPECT_EQ(read<uint32_t>(c)[0], 1u);
  EXPECT_TRUE(once.cold_ms.empty() && once.warm_ms.empty());
  EXPECT_THROW(ctx->run({dispatch("bump0", bump, {{0, &c}}, push(0), 1)}, 10000, {.cold = 4000, .warm = 200, .flush_bytes = 0, .warmup = 0, .flush_reader = {}}), Error);
}

// With a flush reader each cold copy follows a dispatch of it over the scratch buffer (instead of
// a fill): the copies' results and timings are as with a fill; the reader is read and bound like
// any kernel of the sequence (one that is not a SPIR-V module is refused), and only with cold copies.
TEST_F(VulkanRunner, RepeatWithAFlushReader) {
  static const std::vector<uint32_t> bump = glsl("bump_r.comp", R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer C { uint c[]; };
void main() { c[0] = c[0] + 1u; })");
  static const std::vector<uint32_t> reader = glsl("reader.comp", R"(#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer F { uvec4 f[]; };
layout(push_constant) uniform P { uint words; } pc;
// One word per lane, enough to exercise the binding and the push constant.
void main() {
  const uint i = gl_GlobalInvocationID.x % pc.words;
  if (f[i] == uvec4(1u, 2u, 3u, i)) f[i].w = 0u;
})");
  // Not a module: refused where the runner reads the kernel, so it throws exactly when used.
  static const std::vector<uint32_t> broken = {0x07230203u, 0x00010000u, 0u, 1u, 0u, 0xDEADBEEFu};
  Buffer c = ctx->make_buffer(4);
  c.fill_u32(0);
  const RunResult r = ctx->run({dispatch("bump", bump, {{0, &c}}, {}, 1)}, 10000,
                               {.cold = 3, .warm = 2, .flush_bytes = 1 << 20, .flush_reader = reader});
  EXPECT_EQ(read<uint32_t>(c)[0], 5u);
  if (ctx->info().timestamp_period_ns > 0) {
    EXPECT_EQ(r.cold_ms.size(), 3u);
    EXPECT_EQ(r.warm_ms.size(), 2u);
  }
  EXPECT_THROW(ctx->run({dispatch("bump", bump, {{0, &c}}, {}, 1)}, 10000,
                        {.cold = 1, .warm = 1, .flush_bytes = 1 << 20, .flush_reader = broken}),
               Error);
  // Warm copies only: no flush, so the reader is not used at all.
  c.fill_u32(0);
  ctx->run({dispatch("bump", bump, {{0, &c}}, {}, 1)}, 10000,
           {.cold = 0, .warm = 2, .flush_bytes = 1 << 20, .flush_reader = broken});
  EXPECT_EQ(read<uint32_t>(c)[0], 2u);
}

TEST_F(VulkanRunner, BindsASubrangeAtAnOffset) {
  // Output at byte 256 (a multiple of every device's minStorageBufferOffsetAlignment, at most
  // 256 by the spec) of a larger buffer: the bytes around it stay poisoned.
  const uint32_t n = 100, before = 64, after = 36;
  Buffer a = make_filled(*ctx, ramp(n, 2.0f, 1.0f)), b = make_filled(*ctx, ramp(n, 1.0f, 0.5f));
  Buffer y = ctx->make_buffer((before + n + after) * 4);
  y.fill_u32(kPoison);
  Dispatch d = dispatch("add", add_spv(), {{0, &a}, {1, &b}, {2, &y}}, push(n), div_up(n, 64));
  d.bindings[2].offset = before * 4;
  d.bindings[2].range = n * 4;
  ctx->run({d});
  const std::vector<float> av = read<float>(a), bv = read<float>(b);
  const std::vector<uint32_t> yv = read<uint32_t>(y);
  for (uint32_t i = 0; i < before + n + after; ++i) {
    const bool inside = i >= before && i < before + n;
    ASSERT_EQ(yv[i], inside ? std::bit_cast<uint32_t>(av[i - before] + bv[i - before]) : kPoison) << i;
  }
  EXPECT_TRUE(y.guard_intact());
}

TEST_F(VulkanRunner, WriteOnePastTheEndBreaksTheGuard) {
  const uint32_t n = 1000;
  Buffer y = ctx->make_buffer(n * sizeof(float));
  ASSERT_TRUE(y.guard_intact());
  ctx->run({dispatch("off_by_one", off_by_one_spv(), {{0, &y}}, push(n), div_up(n + 1, 64))});
  EXPECT_FALSE(y.guard_intact());
  EXPECT_EQ(read<float>(y)[n - 1], 1.0f);
}

// Freed buffers are reused for the next buffer of the same size (allocation is slow on some
// drivers): the memory comes back with its guard laid again, so an overrun by one case's kernel
// is never blamed on the next case.
TEST_F(VulkanRunner, ReusedBufferComesBackWithAFreshGuard) {
  const uint32_t n = 1000;
  {
    Buffer y = ctx->make_buffer(n * sizeof(float));
    ctx->run({dispatch("off_by_one", off_by_one_spv(), {{0, &y}}, push(n), div_up(n + 1, 64))});
    ASSERT_FALSE(y.guard_intact());
  }
  Buffer again = ctx->make_buffer(n * sizeof(float));
  EXPECT_TRUE(again.guard_intact());
  Buffer other = ctx->make_buffer(n * sizeof(float));  // a second one of that size: a new allocation
  EXPECT_TRUE(other.guard_intact());
}

// A kernel that reads a local it never wrote fails everywhere, not only where the driver's undefined
// value is garbage: the runner gives such locals a poison initial value (spirv_poison.cpp).
TEST_F(VulkanRunner, UninitialisedLocalsReadAsPoison) {
  Buffer a = make_filled(*ctx, std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f});
  const auto run = [&](uint32_t mode) {
    Buffer y = ctx->make_buffer(5 * sizeof(float));
    Dispatch d = dispatch("uninit", uninit_spv(), {{0, &a}, {1, &y}}, push(mode));
    d.spec_constants = {{0, 3}};  // N = 3: the poisoned array must have the specialized length
    ctx->run({d});
    return read<float>(y);
  };
  EXPECT_EQ(run(0), (std::vector<float>{10.0f, 1.0f, 2.0f, 5.0f, 0.5f}));  // correct: no poison seen
  EXPECT_TRUE(std::isnan(run(1)[0]));                               // accumulator never zeroed
  EXPECT_TRUE(std::isnan(run(2)[1]));                               // part[0] never written
  EXPECT_EQ(run(3)[2], -1.0f);                                      // idx 0xFEFEFEFE: out of range
  EXPECT_TRUE(std::isnan(run(4)[4]));                               // tile[N - 1] never written
}

TEST_F(VulkanRunner, SpecializationConstantsChangeTheResult) {
  const uint32_t n = 300;
  Buffer x = make_filled(*ctx, ramp(n, 1.0f, 0.0f));
  Buffer plain = ctx->make_buffer(n * 4), special = ctx->make_buffer(n * 4);
  plain.fill_u32(kPoison);
  special.fill_u32(kPoison);
  // The same SPIR-V twice in one sequence: the pipeline cache must key on the constants.
  const Dispatch base = dispatch("spec default", spec_spv(), {{0, &x}, {1, &plain}}, push(n), div_up(n, 64));
  Dispatch scaled = base;
  scaled.label = "spec scaled";
  scaled.bindings = {{0, &x}, {1, &special}};
  scaled.spec_constants = {{1, std::bit_cast<uint32_t>(0.5f)}, {0, 3}};
  ctx->run({base, scaled});
  const std::vector<float> xv = read<float>(x), p = read<float>(plain), s = read<float>(special);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(p[i], xv[i]) << i;
    ASSERT_EQ(s[i], xv[i] * 3.0f + 0.5f) << i;
  }
}

TEST_F(VulkanRunner, ConsecutiveDispatchesSeeEachOthersWrites) {
  // y = a + b; z = y + b (reads y: read after write); y = z + a (overwrites what the second
  // read: write after read). Big enough that a missing barrier would let dispatches overlap.
  const uint32_t n = 1u << 18;
  Buffer a = make_filled(*ctx, ramp(n, 0.5f, 1.0f)), b = make_filled(*ctx, ramp(n, 0.125f, -2.0f));
  Buffer y = ctx->make_buffer(n * 4), z = ctx->make_buffer(n * 4);
  y.fill_u32(kPoison);
  z.fill_u32(kPoison);
  const auto add = [&](const char* label, Buffer& p, Buffer& q, Buffer& out) {
    return dispatch(label, add_spv(), {{0, &p}, {1, &q}, {2, &out}}, push(n), div_up(n, 64));
  };
  const RunResult r = ctx->run({add("y=a+b", a, b, y), add("z=y+b", y, b, z), add("y=z+a", z, a, y)});
  const std::vector<float> av = read<float>(a), bv = read<float>(b), yv = read<float>(y), zv = read<float>(z);
  for (uint32_t i = 0; i < n; ++i) {
    const float y1 = av[i] + bv[i], z1 = y1 + bv[i];
    ASSERT_EQ(zv[i], z1) << i;
    ASSERT_EQ(yv[i], z1 + av[i]) << i;
  }
  if (ctx->info().timestamp_period_ns > 0) {
    EXPECT_EQ(r.gpu_ms.size(), 3u);
  }
}

TEST_F(VulkanRunner, SubgroupAddAtEverySubgroupSize) {
  const DeviceInfo& info = ctx->info();
  ASSERT_TRUE(info.subgroup_arithmetic) << info.name << " has no subgroup arithmetic in compute shaders";
  const uint32_t groups = 4, n = 64 * groups;
  std::vector<float> xs(n);
  for (uint32_t i = 0; i < n; ++i)
    xs[i] = static_cast<float>(static_cast<int>(i * 7 % 13) - 6);  // small integers: exact sums
  Buffer x = make_filled(*ctx, xs), sums = ctx->make_buffer(n * 4), ids = ctx->make_buffer(n * 4),
         sizes = ctx->make_buffer(n * 4);
  // Without size control the only size is the driver's, requested as 0.
  std::vector<uint32_t> requests = info.subgroup_size_control ? info.subgroup_sizes() : std::vector<uint32_t>{0};
  for (uint32_t req : requests) {
    SCOPED_TRACE("required subgroup size " + std::to_string(req));
    sums.fill_u32(kPoison);
    ids.fill_u32(kPoison);
    sizes.fill_u32(0);
    Dispatch d = dispatch("subgroup_sum", subgroup_sum_spv(), {{0, &x}, {1, &sums}, {2, &ids}, {3, &sizes}}, {}, groups);
    d.required_subgroup_size = req;
    ctx->run({d});
    const uint32_t expect_size = req ? req : info.subgroup_size;
    const std::vector<float> s = read<float>(sums);
    const std::vector<uint32_t> g = read<uint32_t>(ids), z = read<uint32_t>(sizes);
    // Group invocations by the subgroup they report; each group's sum is what every member got.
    std::map<uint32_t, std::pair<float, uint32_t>> by_group;
    for (uint32_t i = 0; i < n; ++i) {
      ASSERT_EQ(z[i], expect_size) << i;
      by_group[g[i]].first += xs[i];
      by_group[g[i]].second += 1;
    }
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(s[i], by_group[g[i]].first) << "invocation " << i << ", subgroup " << g[i];
    for (const auto& [id, sum_count] : by_group) EXPECT_LE(sum_count.second, expect_size) << "subgroup " << id;
    EXPECT_EQ(by_group.size(), groups * div_up(64, expect_size));
  }
}

TEST_F(VulkanRunner, RequiredSubgroupSizeOutOfRangeIsAnError) {
  const DeviceInfo& info = ctx->info();
  Buffer x = ctx->make_buffer(256 * 4), s = ctx->make_buffer(256 * 4), g = ctx->make_buffer(256 * 4),
         z = ctx->make_buffer(256 * 4);
  Dispatch d = dispatch("subgroup_sum", subgroup_sum_spv(), {{0, &x}, {1, &s}, {2, &g}, {3, &z}}, {}, 4);
  const std::string why = info.subgroup_size_control ? "is not a power of two in" : "no subgroup size control";
  d.required_subgroup_size = info.max_subgroup_size * 2;
  test::expect_error([&] { ctx->run({d}); }, why);
  d.required_subgroup_size = 3;
  test::expect_error([&] { ctx->run({d}); }, why);
}

uint32_t spin_on_host(uint32_t outer, uint32_t inner) {
  uint32_t acc = 0;
  for (uint32_t i = 0; i < outer; ++i)
    for (uint32_t k = 0; k < inner; ++k) acc = acc * 1664525u + 1013904223u + k;
  return acc;
}

TEST_F(VulkanRunner, PushConstantsReachTheShader) {
  // Two push constants (outer, inner), against the same recurrence on the host.
  Buffer y = ctx->make_buffer(4);
  ctx->run({dispatch("spin", spin_spv(), {{0, &y}}, push(3u, 1000u))});
  EXPECT_EQ(read<uint32_t>(y)[0], spin_on_host(3, 1000));
}

TEST_F(VulkanRunner, ReportsTheDriversLoopIterationLimit) {
  // lavapipe ends the loops of an invocation after 65535 iterations in all (both loops count):
  // the report must be true, or kernels would be trusted where the driver truncates them.
  const uint32_t limit = ctx->info().loop_iteration_limit;
  if (limit == 0) GTEST_SKIP() << ctx->info().name << " has no known loop iteration limit";
  Buffer y = ctx->make_buffer(4);
  ctx->run({dispatch("spin", spin_spv(), {{0, &y}}, push(1u, limit - 1))});
  EXPECT_EQ(read<uint32_t>(y)[0], spin_on_host(1, limit - 1));
  ctx->run({dispatch("spin", spin_spv(), {{0, &y}}, push(4u, limit / 2))});
  EXPECT_NE(read<uint32_t>(y)[0], spin_on_host(4, limit / 2)) << "the driver no longer truncates long loops";
}

// A kernel far slower than the 2 ms the tests allow it, and its result: one invocation looping
// 2^28 times (a quarter to one second on a GPU), or, where the driver ends loops early
// (lavapipe: 65535 iterations), 1024 invocations of 60000 (0.5 ms each on one lavapipe
// thread: 0.5 s on one, 16 ms on the 32 threads lavapipe uses at most: still 8x the timeout).
// The loops are bounded, so the SPIR-V is legal.
// Compiled first by a short run of the same SPIR-V, so that a short limit is the kernel's alone
// (a CPU driver compiles at the first dispatch, limited apart: vk::Context::run).
Dispatch slow_kernel(Context& ctx, Buffer& y, uint32_t* result) {
  Buffer warm = ctx.make_buffer(4);
  ctx.run({dispatch("spin", spin_spv(), {{0, &warm}}, push(1u, 1u))}, 60000);
  const uint32_t limit = ctx.info().loop_iteration_limit;
  const uint32_t outer = limit ? 1u : 1u << 12, inner = limit ? std::min(limit - 1, 60000u) : 1u << 16;
  *result = spin_on_host(outer, inner);
  return dispatch("spin", spin_spv(), {{0, &y}}, push(outer, inner), limit ? 1024 : 1);
}

TEST_F(VulkanRunner, HungKernelTimesOutAndTheContextRecovers) {
  Buffer y = ctx->make_buffer(4);
  uint32_t expect = 0;
  const Dispatch spin = slow_kernel(*ctx, y, &expect);
  test::expect_error([&] { ctx->run({spin}, 2); }, "kernel hung or too slow: spin did not finish within 2 ms");
  // The next run waits out the abandoned one (its buffer stays alive meanwhile), then works.
  Buffer out = ctx->make_buffer(4);
  ctx->run({dispatch("spin short", spin_spv(), {{0, &out}}, push(2u, 10u))}, 60000);
  EXPECT_EQ(read<uint32_t>(out)[0], spin_on_host(2, 10));
  EXPECT_EQ(read<uint32_t>(y)[0], expect);
}

TEST_F(VulkanRunner, ContextDestroyedWhileAKernelStillRuns) {
  // The destructor waits for the abandoned kernel before freeing anything it writes to (under
  // AddressSanitizer a use after free would show here).
  Buffer y = ctx->make_buffer(4);
  uint32_t expect = 0;
  const Dispatch spin = slow_kernel(*ctx, y, &expect);
  test::expect_error([&] { ctx->run({spin}, 2); }, "did not finish within 2 ms");
  ctx.reset();
  EXPECT_EQ(read<uint32_t>(y)[0], expect);
}

TEST_F(VulkanRunner, SelectsDevicesByNameAndIndex) {
  const std::vector<DeviceInfo> devs = list_devices();
  for (const DeviceInfo& d : devs) {
    EXPECT_EQ(Context(std::to_string(d.index)).info().name, d.name);
    // A case-changed name picks the first device whose name contains it.
    std::string upper = d.name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const auto first = std::find_if(devs.begin(), devs.end(), [&](const DeviceInfo& e) { return e.name == d.name; });
    EXPECT_EQ(Context(upper).info().index, first->index);
  }
  test::expect_error([] { Context c("no-such-device-xyz"); },
                     "no device name contains 'no-such-device-xyz'; devices: [0] " + devs[0].name);
  test::expect_error([&] { Context c(std::to_string(devs.size())); },
                     "no device with index " + std::to_string(devs.size()));
}

TEST_F(VulkanRunner, BadInputIsAClearError) {
  Buffer a = ctx->make_buffer(64 * 4), b = ctx->make_buffer(64 * 4), y = ctx->make_buffer(64 * 4);
  const Dispatch good = dispatch("add", add_spv(), {{0, &a}, {1, &b}, {2, &y}}, push(64u));
  ctx->run({good});
  Dispatch d = good;
  d.entry = "nope";
  test::expect_error([&] { ctx->run({d}); }, "add: the SPIR-V has no compute entry point 'nope' (found: main)");
  d = good;
  const uint32_t junk[] = {1, 2, 3, 4, 5, 6};
  d.spirv = junk;
  test::expect_error([&] { ctx->run({d}); }, "add: not SPIR-V");
  d = good;
  d.push_constants = {1, 2, 3};
  test::expect_error([&] { ctx->run({d}); }, "3 bytes of push constants; expected a multiple of 4");
  d = good;
  d.bindings[1].binding = 0;
  test::expect_error([&] { ctx->run({d}); }, "binding 0 is given twice");
  d = good;
  d.groups[0] = 0;
  test::expect_error([&] { ctx->run({d}); }, "groups[0] = 0");
  d = good;
  d.bindings[2].range = 65 * 4;
  test::expect_error([&] { ctx->run({d}); }, "binding 2 range 260 at offset 0 overruns its 256-byte buffer");
  if (ctx->info().min_storage_buffer_offset_alignment > 4) {
    d = good;
    d.bindings[0].offset = 4;
    test::expect_error([&] { ctx->run({d}); }, "binding 0 offset 4 is not a multiple of");
  }
  d = good;
  d.spec_constants = {{7, 1}, {7, 2}};
  test::expect_error([&] { ctx->run({d}); }, "specialization constant 7 is given twice");
  // The same shader with local_size_x patched to 2^20, more than any device allows (glslc
  // states the size twice: OpExecutionMode LocalSize and the WorkgroupSize constant).
  std::vector<uint32_t> huge(std::begin(add_spv()), std::end(add_spv()));
  for (size_t i = 5; i + 5 < huge.size(); i += huge[i] >> 16) {
    if (huge[i] == (6u << 16 | 16u) && huge[i + 2] == 17)
      huge[i + 3] = 1u << 20;  // OpExecutionMode <id> LocalSize 64 1 1
    if (huge[i] == (4u << 16 | 43u) && huge[i + 3] == 64) huge[i + 3] = 1u << 20;  // OpConstant <uint> <id> 64
  }
  d = good;
  d.spirv = huge;
  test::expect_error([&] { ctx->run({d}); }, "add: local_size[0] = 1048576 exceeds maxComputeWorkGroupSize");
  d = good;
  d.bindings[2].buffer = nullptr;
  test::expect_error([&] { ctx->run({d}); }, "binding 2 has no buffer");
  test::expect_error([&] { ctx->run({}); }, "empty sequence");
  test::expect_error([&] { y.upload(junk, sizeof junk, 64 * 4 - 8); },
                     "upload of 24 bytes at offset 248 overruns its 256 bytes");
  Context other;
  Buffer foreign = other.make_buffer(64 * 4);
  d = good;
  d.bindings[2].buffer = &foreign;
  test::expect_error([&] { ctx->run({d}); }, "binding 2 is a buffer of another Context");
}

TEST_F(VulkanRunner, BufferOutlivesItsContext) {
  Buffer kept = ctx->make_buffer(16, 8);
  kept.fill_u32(0x01020304u);
  ctx.reset();
  EXPECT_EQ(read<uint32_t>(kept), std::vector<uint32_t>(4, 0x01020304u));
  EXPECT_TRUE(kept.guard_intact());
}

}  // namespace
}  // namespace moe::vk
