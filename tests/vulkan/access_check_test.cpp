// The runner's access checks (Dispatch::check_access, compare/vk/spirv_access.cpp): undefined
// behaviour that lavapipe makes harmless must still fail. One kernel, one mode per defect; mode 0
// is correct and must pass clean, with the checks changing none of its results. The checked
// modules must also be valid SPIR-V (spirv-val under the Vulkan 1.2 rules), for the bundled
// kernels too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "compare/manifest/manifest.h"
#include "compare/run/driver.h"
#include "compare/vk/runner.h"
#include "compare/vk/runner_internal.h"
#include "vulkan/test_glsl.h"

namespace moe::vk {
namespace {

using test::glsl;

// y[0..WG) from a shared reduction and private arrays. Modes: 1 writes a private array one past
// its end, 2 reads the input at index n (inside the guard, past the usable size), 3 shifts by 32,
// 4 drops the barrier between subgroup 0's total and everyone's read of it, 5 has every lane
// store the same 0 to a shared flag (benign: not a race), 6 has the lanes of subgroups > 0 store
// their own id to it (a race), 7 shuffles with the xor mask `shift` (lane ^ mask outside the
// subgroup from a mask of its size), 8 reads a shared element before anyone stored it and lets
// the value decide nothing (a poisoned value could not show it: uninitialised shared memory), 9
// does the same with an element of a private array no store reached, 10 reads a neighbouring
// lane's shared element with no barrier after its store (lanes of one subgroup race too), 11
// stores over an element a neighbouring lane has just loaded (a write-after-read race), 12 has
// every lane of subgroup 0 load one element and then its last lane store over it: readers and
// writer share a subgroup, so a GPU (or lavapipe's vector lanes) may record all the reads in one
// step, and the writer's own read must not hide the others'. 13 takes a max with a NaN for its
// identity (-inf's bit pattern plus one: lavapipe returns the other operand, another driver may
// return the NaN), 14 the same in a vector; mode 0's identity is -inf itself.
const std::vector<uint32_t>& defects_spv() {
  static const std::vector<uint32_t> words = glsl("defects.comp", R"(#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint n; uint mode; uint shift; };
shared float partial[64];
shared uint flag;
shared float grid[2][32];
shared float lanes[64];
void main() {
  const uint l = gl_LocalInvocationID.x;
  float tmp[4];
  for (uint k = 0u; k < (mode == 1u ? 5u : 4u); ++k) tmp[k] = float(k);
  const uint at = mode == 2u ? n : l % n;
  float v = a[at] + tmp[l % 4u] + float((1u << (mode == 3u ? shift : 3u)) & 1u);
  grid[l / 32u][l % 32u] = v;  // 2-D: rows written by different subgroups, no element shared
  if (l == 0u) flag = 0u;
  if (mode == 8u && partial[l] == 12345.0) v += 1.0;
  float u[2];
  u[l % 2u] = v;
  if (mode == 9u && u[(l + 1u) % 2u] == 12345.0) v += 1.0;
  v = u[l % 2u];
  const float lowest = uintBitsToFloat(mode == 13u || mode == 14u ? 0xFF800001u : 0xFF800000u);
  if (mode == 14u) v = max(vec2(lowest, -1.0), vec2(v)).x;
  else v = max(lowest, v);
  lanes[l] = v;
  if (mode == 10u) v += lanes[l ^ 1u];
  barrier();
  if (mode == 11u) lanes[l] = lanes[l ^ 1u] + 1.0;
  if (mode == 12u && gl_SubgroupID == 0u) {
    v += lanes[0];
    if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u) lanes[0] = 7.0;
  }
  if (mode == 5u) flag = 0u;
  if (mode == 6u && gl_SubgroupID != 0u) flag = gl_SubgroupID;
  v = subgroupAdd(grid[l / 32u][l % 32u]);
  if (mode == 7u) v = subgroupShuffleXor(v, shift);
  if (subgroupElect()) partial[gl_SubgroupID] = v;
  barrier();
  if (gl_SubgroupID == 0u) {
    float t = 0.0;
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) t += partial[s];
    t = subgroupAdd(t);
    if (subgroupElect()) partial[0] = t;
  }
  if (mode != 4u) barrier();
  y[l] = partial[0];
})");
  return words;
}

class AccessCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (list_devices().empty()) GTEST_SKIP() << "no Vulkan device on this machine";
    ctx = std::make_unique<Context>();
  }

  // Runs the kernel in `mode` (checked or not); the violations, and y in *out.
  std::vector<std::string> run(uint32_t mode, bool checked, std::vector<float>* out = nullptr, uint32_t shift = 32) {
    const uint32_t n = 64;
    std::vector<float> av(n);
    for (uint32_t i = 0; i < n; ++i) av[i] = 0.25f * float(i);
    Buffer a = ctx->make_buffer(n * 4, 64), y = ctx->make_buffer(n * 4);
    a.upload(av.data(), n * 4);
    Dispatch d;
    d.label = "defects";
    d.spirv = defects_spv();
    d.bindings = {{0, &a}, {1, &y}};
    const uint32_t pc[3] = {n, mode, shift};
    d.push_constants.resize(sizeof pc);
    std::memcpy(d.push_constants.data(), pc, sizeof pc);
    d.check_access = checked;
    const RunResult r = ctx->run({d});
    if (out) out->resize(n), y.download(out->data(), n * 4);
    return r.access_violations;
  }
  std::unique_ptr<Context> ctx;
};

TEST_F(AccessCheck, CorrectKernelPassesWithUnchangedResults) {
  std::vector<float> plain, checked;
  EXPECT_TRUE(run(0, false, &plain).empty());
  EXPECT_TRUE(run(0, true, &checked).empty());
  EXPECT_EQ(plain, checked);
  EXPECT_TRUE(run(5, true).empty()) << "every lane storing the same value is not a race";
}

TEST_F(AccessCheck, EachDefectIsNamed) {
  const auto first = [&](uint32_t mode) {
    const std::vector<std::string> v = run(mode, true);
    return v.empty() ? std::string("(none)") : v[0];
  };
  EXPECT_NE(first(1).find("an array of 4 elements"), std::string::npos) << first(1);
  EXPECT_NE(first(2).find("index into 'a' (binding 0) past the buffer's usable size"), std::string::npos) << first(2);
  EXPECT_NE(first(3).find("shift by 32 or more bits"), std::string::npos) << first(3);
  // Races need several subgroups per workgroup, and are seen when the racing accesses happen in
  // the racy order: always on a CPU driver (lavapipe runs a workgroup's subgroups one after
  // another up to each barrier), by chance on a GPU (H100: mode 4 and 6 went unseen in a run).
  const bool in_order = ctx->info().type == "cpu";
  const auto race = [&](uint32_t mode, const std::string& want) {
    const std::string got = first(mode);
    if (in_order) EXPECT_NE(got.find(want), std::string::npos) << got;
    else EXPECT_TRUE(got == "(none)" || got.find(want) != std::string::npos) << got;
  };
  if (ctx->info().subgroup_size < 64) {
    race(4, "'partial': a load of an element another invocation stored");
    race(6, "'flag': a store to an element another invocation stored");
  }
  // Unlike a race, a read before any store is seen in every order (no invocation stores first).
  std::vector<float> plain;
  EXPECT_TRUE(run(8, false, &plain).empty());
  EXPECT_EQ(plain.size(), 64u);
  EXPECT_NE(first(8).find("'partial': a load of an element no invocation stored since the workgroup started "
                          "(uninitialised shared memory)"),
            std::string::npos) << first(8);
  EXPECT_NE(first(9).find("'u': a load of an element this invocation never stored (an uninitialised local variable)"),
            std::string::npos) << first(9);
  // Lanes l and l ^ 1 share a subgroup: whichever runs first, the read finds the neighbour's
  // store unordered by a barrier (a race) or not yet there (uninitialised), in any order.
  const std::string lane = first(10);
  EXPECT_NE(lane.find("'lanes': a load of an element "), std::string::npos) << lane;
  EXPECT_TRUE(lane.find("another invocation stored since the last barrier") != std::string::npos ||
              lane.find("no invocation stored since the workgroup started") != std::string::npos)
      << lane;
  // Whichever order the lanes take, mode 11 (a pair) and mode 12 (a subgroup's loads and its last
  // lane's store) are named: the store after another lane's load (write-after-read) or a load
  // after another lane's store.
  for (uint32_t mode : {11u, 12u}) {
    const std::string war = first(mode);
    EXPECT_TRUE(war.find("'lanes': a store to an element another invocation loaded since the last barrier "
                         "(a write-after-read race)") != std::string::npos ||
                war.find("'lanes': a load of an element another invocation stored since the last barrier") !=
                    std::string::npos)
        << "mode " << mode << ": " << war;
  }
  // A NaN identity changes nothing in lavapipe's outputs: the check names it.
  std::vector<float> correct, nan_identity;
  EXPECT_TRUE(run(0, false, &correct).empty());
  EXPECT_TRUE(run(13, false, &nan_identity).empty());
  if (in_order) {
    EXPECT_EQ(nan_identity, correct) << "lavapipe's max returns the operand that is not a NaN";
  }
  EXPECT_NE(first(13).find("max (FMax) with a NaN operand (which operand it returns is undefined)"), std::string::npos)
      << first(13);
  EXPECT_NE(first(14).find("max (FMax) with a NaN operand"), std::string::npos) << first(14);
  EXPECT_TRUE(run(3, true, nullptr, 31).empty()) << "a shift by 31 is defined";
  const uint32_t sg = ctx->info().subgroup_size;
  const std::vector<std::string> past = run(7, true, nullptr, sg);
  ASSERT_FALSE(past.empty()) << "a shuffle xor mask of the subgroup's size went unseen";
  EXPECT_NE(past[0].find("shuffle xor mask naming no lane of the subgroup (of " + std::to_string(sg) + ")"),
            std::string::npos) << past[0];
  EXPECT_TRUE(run(7, true, nullptr, sg - 1).empty()) << "a mask below the subgroup size names a lane";
}

TEST_F(AccessCheck, UncheckedRunsReportNothing) {
  for (uint32_t mode : {1u, 3u, 4u}) EXPECT_TRUE(run(mode, false).empty()) << mode;
}

// Races between workgroups of one dispatch (storage buffers): four workgroups of 32 lanes in a
// 2 x 2 grid, each owning a slice of 32 elements of y, updated in place. Mode 0 is correct; 1
// reads the slice of the workgroup in the other row (wg ^ 2: only gl_WorkGroupID.y tells the two
// apart) before storing its own; 2 has every workgroup store its index to y[0]; 3 has every
// workgroup store 1.0 to a flag (the same value: benign, as in shared memory).
const std::vector<uint32_t>& workgroups_spv() {
  static const std::vector<uint32_t> words = glsl("workgroups.comp", R"(#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer Y { float y[]; };
layout(set = 0, binding = 1) buffer F { float f[]; };
layout(push_constant) uniform PC { uint mode; };
void main() {
  const uint wg = gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y, l = gl_LocalInvocationID.x;
  const uint from = mode == 1u ? wg ^ 2u : wg;
  const float v = y[from * 32u + l];
  y[wg * 32u + l] = 2.0 * v + 1.0;
  if (mode == 2u && l == 0u) y[0] = float(wg);
  if (mode == 3u && l == 0u) f[0] = 1.0;
})");
  return words;
}

// The "last workgroup reduces" idiom: each workgroup stores its partial, then the last one to
// count itself in (an atomic counter, ordered by device-scope barriers) reads every partial.
// Correct under Vulkan's memory model; the shadows cannot follow it, so it is not checked.
const std::vector<uint32_t>& last_workgroup_spv() {
  static const std::vector<uint32_t> words = glsl("last_workgroup.comp", R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer P { float partial[]; };
layout(set = 0, binding = 1) buffer C { uint count; float total; };
void main() {
  const uint wg = gl_WorkGroupID.x;
  partial[wg] = float(wg + 1u);
  memoryBarrierBuffer();
  if (atomicAdd(count, 1u) != gl_NumWorkGroups.x - 1u) return;
  memoryBarrierBuffer();
  float t = 0.0;
  for (uint i = 0u; i < gl_NumWorkGroups.x; ++i) t += partial[i];
  total = t;
})");
  return words;
}

TEST_F(AccessCheck, RacesBetweenWorkgroupsAreNamedInAnyOrder) {
  const auto run_mode = [&](uint32_t mode, bool checked, std::vector<float>* out = nullptr) {
    std::vector<float> yv(128);
    for (size_t i = 0; i < yv.size(); ++i) yv[i] = 0.5f * float(i);
    Buffer y = ctx->make_buffer(128 * 4), f = ctx->make_buffer(4);
    y.upload(yv.data(), 128 * 4);
    Dispatch d;
    d.label = "workgroups";
    d.spirv = workgroups_spv();
    d.bindings = {{0, &y}, {1, &f}};
    d.groups[0] = 2, d.groups[1] = 2;
    d.push_constants.resize(4);
    std::memcpy(d.push_constants.data(), &mode, 4);
    d.check_access = checked;
    const RunResult r = ctx->run({d});
    if (out) out->resize(128), y.download(out->data(), 128 * 4);
    return r.access_violations.empty() ? std::string("(none)") : r.access_violations[0];
  };
  std::vector<float> plain, checked;
  EXPECT_EQ(run_mode(0, false, &plain), "(none)");
  EXPECT_EQ(run_mode(0, true, &checked), "(none)");
  EXPECT_EQ(plain, checked) << "the checks change no result";
  EXPECT_EQ(run_mode(3, true), "(none)") << "every workgroup storing the same value is not a race";
  // Whichever workgroup runs first, one side of each pair finds the other's access: a load after
  // the other's store, or a store after the other's load. On a CPU driver even when the two run at
  // once (each swaps its own shadow word, a locked exchange, before reading the other's); a GPU's
  // relaxed atomics may let both sides of a pair read first (a miss, never a false alarm).
  const std::string cross = run_mode(1, true);
  if (ctx->info().type == "cpu" || cross != "(none)") {
    EXPECT_NE(cross.find("'y' (binding 0): a "), std::string::npos) << cross;
    EXPECT_TRUE(cross.find("a load of an element another workgroup stored in this dispatch") != std::string::npos ||
                cross.find("a store to an element another workgroup loaded in this dispatch") != std::string::npos)
        << cross;
    EXPECT_NE(cross.find("(a data race between workgroups: nothing orders them)"), std::string::npos) << cross;
  }
  // Stores of one element by every workgroup meet on one shadow word: seen on every device.
  const std::string both = run_mode(2, true);
  EXPECT_NE(both.find("another workgroup"), std::string::npos) << both;
  // The shadows hold one run: a repeat (--perf's timing) with the checks on is refused.
  Buffer y = ctx->make_buffer(128 * 4), f = ctx->make_buffer(4);
  Dispatch d;
  d.spirv = workgroups_spv();
  d.bindings = {{0, &y}, {1, &f}};
  d.push_constants.resize(4);
  d.check_access = true;
  Repeat twice;
  twice.warm = 2;
  EXPECT_THROW(ctx->run({d}, 10000, twice), Error);
  // The checked module is valid SPIR-V, its shadow slot found by the runner.
  const detail::AccessLimits lim{
      .min_binding = 2, .spec = {}, .invocations = 32, .max_shared_bytes = 32768, .subgroup_size = 0, .bare_vars = {}};
  const detail::AccessCheck ac = detail::check_access(workgroups_spv(), "workgroups", "main", lim);
  ASSERT_FALSE(ac.words.empty());
  EXPECT_NO_THROW(compare::validate_spirv(ac.words, "workgroups (checked)"));
  EXPECT_EQ(std::count_if(ac.lengths.begin(), ac.lengths.end(), [](const detail::RuntimeLength& l) { return l.shadow; }),
            2) << "y and f";
}

TEST_F(AccessCheck, DeviceScopeOrderingIsNotCalledARace) {
  Buffer p = ctx->make_buffer(8 * 4), c = ctx->make_buffer(8);
  const uint32_t zero[2] = {0, 0};
  c.upload(zero, 8);
  Dispatch d;
  d.label = "last_workgroup";
  d.spirv = last_workgroup_spv();
  d.bindings = {{0, &p}, {1, &c}};
  d.groups[0] = 8;
  d.check_access = true;
  const RunResult r = ctx->run({d});
  EXPECT_TRUE(r.access_violations.empty()) << r.access_violations[0];
  float out[2];
  c.download(out, 8);
  EXPECT_EQ(out[1], 36.0f);  // 1 + ... + 8
}

// The runner places the workgroup shadows after the slots: those that fit the budget get their
// start with the flag; one that does not points at the scratch pair with the flag clear, so its
// kernel records nothing (the check is off there, never a false alarm from shared words).
TEST(AccessCheckModule, ShadowsPastTheBudgetAreSwitchedOff) {
  const std::vector<detail::RuntimeLength> lens = {{.binding = 0, .offset = 0, .stride = 4, .shadow = false},
                                                  {.binding = 1, .offset = 0, .stride = 4, .shadow = true},
                                                  {.binding = 2, .offset = 0, .stride = 4, .shadow = true}};
  std::vector<uint32_t> init = {0, 100, 10, 1000};  // word 0, then each slot's element count
  detail::place_global_shadows(lens, init, 64);
  EXPECT_EQ(init[1], 100u) << "a length slot stays a length";
  EXPECT_EQ(init[2], 5u | 0x80000000u) << "after the 3 slots and the scratch pair (3, 4)";
  EXPECT_EQ(init[3], 3u) << "2000 words past a budget of 64: the scratch pair, flag clear";
  EXPECT_EQ(init.size(), 1u + 5u + 20u);
}

// The checked form of every bundled kernel is valid SPIR-V (the driver would otherwise be handed
// undefined input), with and without debug names.
TEST(AccessCheckModule, BundledKernelsStayValid) {
  const compare::Manifest m = compare::load_kernels("");
  ASSERT_FALSE(m.kernels.empty());
  for (const compare::KernelEntry& k : m.kernels) {
    const detail::AccessLimits lim{.min_binding = 16,
                                   .spec = {},
                                   .invocations = 256,
                                   .max_shared_bytes = 32768,
                                   .subgroup_size = 32,
                                   .bare_vars = detail::bare_variables(k.spirv)};
    // As the runner does: the poison first, the checks on the poisoned module.
    const std::vector<uint32_t> poisoned = detail::poison_locals(k.spirv, k.name, {});
    const detail::AccessCheck ac = detail::check_access(poisoned, k.name, k.entry, lim);
    if (ac.words.empty()) continue;
    try {
      compare::validate_spirv(ac.words, k.name + " (checked)");
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    EXPECT_FALSE(ac.sites.empty()) << k.name;
  }
}

}  // namespace
}  // namespace moe::vk
