// The Vulkan runner: devices, buffers with guard regions, compute pipelines from SPIR-V, and
// timed dispatch sequences with explicit barriers and a timeout. Built on Vulkan-Hpp RAII
// handles (vulkan_raii.hpp); works on lavapipe (every CI machine) and on NVIDIA.
//
// Contract. Every argument is checked before anything is recorded (bindings, offsets and
// alignment, ranges, push-constant size, workgroup sizes against the device limits, entry
// point, subgroup size); a bad one throws moe::Error naming the dispatch's label, the binding,
// what was expected and what was found. Vulkan failures (vk::SystemError) are rethrown as
// moe::Error. The device is opened with every feature it supports except robust buffer access
// (robustness would hide out-of-bounds accesses). A Context and its Buffers are not thread-safe:
// use them from one thread at a time. A Buffer may outlive its Context.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"

namespace moe::vk {

struct DeviceInfo {
  int index = 0;
  std::string name, driver, type;    // type: "cpu", "discrete", "integrated", "virtual", "other"
  uint32_t api_version = 0;          // VK_MAKE_API_VERSION
  uint32_t subgroup_size = 0;        // default subgroup size
  uint32_t min_subgroup_size = 0, max_subgroup_size = 0;  // = subgroup_size without subgroup size control
  bool subgroup_size_control = false;  // requiredSubgroupSize usable for compute
  bool subgroup_arithmetic = false;    // subgroupAdd etc. in compute shaders
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_uniform_buffer_range = 0;
  uint32_t max_shared_memory = 0;      // maxComputeSharedMemorySize
  uint32_t max_workgroup_invocations = 0;
  // With a required subgroup size, a workgroup may hold at most this many subgroups
  // (maxComputeWorkgroupSubgroups; 0 without subgroup size control).
  uint32_t max_workgroup_subgroups = 0;
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint64_t min_storage_buffer_offset_alignment = 0;
  float timestamp_period_ns = 0;       // 0: no compute timestamps
  // Loop iterations one invocation may run, all its loops together, before the driver silently
  // ends them (0: no known limit). lavapipe counts every loop back-edge of an invocation
  // against 65535 (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS) and then exits the loops: a kernel
  // looping longer computes garbage there. Harness code should warn before trusting it.
  uint32_t loop_iteration_limit = 0;
  // Memory heaps: size, device-local, and whether a host-visible coherent type lives there
  // (a device-local one is the resizable-BAR window that --perf buffers are placed in).
  struct Heap {
    uint64_t size = 0;
    bool device_local = false, host_visible = false;
  };
  std::vector<Heap> heaps;
  // All subgroup sizes a compute pipeline can be pinned to (powers of two in [min, max] with
  // subgroup size control; just the default otherwise).
  std::vector<uint32_t> subgroup_sizes() const;
};

// Every physical device the loader reports (empty if there is no Vulkan at all).
std::vector<DeviceInfo> list_devices();
// The index Context(device) opens: "" the first (a discrete GPU before a CPU driver), an index,
// or a case-insensitive name substring. Throws moe::Error listing the devices when none matches.
int choose_device(const std::vector<DeviceInfo>& devs, const std::string& device);

class Context;

// A storage buffer of `size` bytes followed by `guard` bytes of a known pattern (ggml's sentinels):
// writes past the end are detected by guard_intact(). Upload and read-back are memcpy where the
// host maps the memory, and copies through a staging buffer (one submission each, waited for)
// where it does not (Context::Memory::DeviceSpeed on a discrete GPU). Host access must not overlap
// a run that uses the buffer.
class Buffer {
 public:
  ~Buffer();
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  size_t size() const;  // usable bytes, excluding the guard
  // Its memory is device-local (else system memory, read over PCIe).
  bool device_local() const;
  void upload(const void* data, size_t bytes, size_t offset = 0);
  void download(void* data, size_t bytes, size_t offset = 0) const;
  void fill_u32(uint32_t pattern);  // e.g. poison outputs before a dispatch (0x7FC00BAD: a NaN)
  bool guard_intact() const;

 private:
  friend class Context;
  struct Impl;
  explicit Buffer(std::unique_ptr<Impl> impl);
  static Impl& live(Impl* impl);  // throws moe::Error on a moved-from Buffer
  std::unique_ptr<Impl> impl_;
};

// A binding that reaches the end of the buffer's usable size also exposes the guard to the
// shader (as far as maxStorageBufferRange allows): drivers that bounds-check storage buffers
// (lavapipe always does) would otherwise drop a write past the end instead of letting it hit
// the guard. Kernels must take their sizes from push constants or spec constants, not from
// the array's .length(), which counts the guard.
struct Binding {
  uint32_t binding = 0;
  Buffer* buffer = nullptr;
  uint64_t offset = 0;  // bytes; must respect min_storage_buffer_offset_alignment
  uint64_t range = 0;   // bytes; 0 = to the end of the usable size
  // A uniform buffer (read-only, at most maxUniformBufferRange; the guard is not exposed) instead
  // of a storage buffer: engines that keep their parameters in a UBO.
  bool uniform = false;
};

struct SpecConstant {
  uint32_t id = 0;
  uint32_t value = 0;  // raw 32 bits (use std::bit_cast for floats)
};

// One compute dispatch. Pipelines are cached inside the Context, keyed by everything they
// depend on: the SPIR-V words themselves (no hash, so no collision), entry, spec constants,
// required subgroup size, binding numbers and push-constant size. The push constants must
// be the size the shader declares (the manifest layer checks that by reflection; this layer
// cannot).
struct Dispatch {
  std::string label;                      // for errors and timing ("rmsnorm")
  std::span<const uint32_t> spirv;
  std::string entry = "main";
  std::vector<Binding> bindings;          // descriptor set 0, storage buffers
  std::vector<uint8_t> push_constants;    // bytes at offset 0
  std::vector<SpecConstant> spec_constants;
  uint32_t groups[3] = {1, 1, 1};         // each in 1..max_workgroup_count
  uint32_t required_subgroup_size = 0;    // 0: the driver's choice; else needs subgroup size control
  // Check every dynamic array, buffer and vector index and every shift amount in the kernel
  // (undefined behaviour when out of range, which a driver may hide): RunResult names the
  // violated access. Costs a compare and a select per access; off for timing runs. Needs one
  // storage-buffer slot more than `bindings` (else the dispatch runs unchecked).
  bool check_access = false;
  // Give every uninitialised local a poison initializer (runner_internal.h, poison_locals): a
  // kernel reading a local before writing it then shows it on every driver. On by default
  // (correctness runs); off for timing runs, which run the kernel as the engine compiled it.
  bool poison_locals = true;
};

// Timing (--perf): instead of one run, the sequence is recorded cold + warm times into one
// command buffer, each copy between two timestamps, one submission (no host round trip and no
// idle gap between copies). Each cold copy follows a fill of flush_bytes of a scratch buffer:
// larger than the GPU's last-level cache, it evicts the copy's inputs, which then come from
// memory as a decode's weights do. Warm copies follow one another (inputs left in cache where
// they fit). A kernel that updates state in place advances it once per copy.
// `warmup` fills of the scratch buffer come first, untimed: a GPU idle before the submission runs
// at idle clocks and takes tens of milliseconds of sustained work to reach its working clocks
// (docs/benchmarks.md, "What the figures mean").
// With `flush_reader` (a kernel: binding 0 the scratch buffer as uvec4s, push constant its uvec4
// count), each cold copy follows a dispatch of it instead of a fill: the scratch buffer is read,
// not written, so the last-level cache then holds clean lines, as it does when a decode's weights
// follow other weights; after a fill it holds dirty lines, whose write-back competes with the
// copy's reads (records/benchmarks-history.md, "The cold flush").
struct Repeat {
  uint32_t cold = 0, warm = 0;
  uint64_t flush_bytes = 0;
  uint32_t warmup = 0;
  std::span<const uint32_t> flush_reader;
};

// A sequence this device cannot run as described, found before anything is submitted: a
// workgroup larger than the device allows (at the pinned subgroup size too), a grid, binding or
// push-constant block past a limit, no such entry point. The device is untouched, so a caller
// gating kernels fails the case with this reason and goes on; it is not a fault of the device (an
// isolated worker is not restarted for it: compare/run/isolate.h).
struct PlanError : Error {
  using Error::Error;
};

// Throws what a failed vkCreateShaderModule / vkCreateComputePipelines (VkResult `result`, the
// driver's message `what`) for kernel `label` is: a lost device (VK_ERROR_DEVICE_LOST) stays a
// device fault (Error); any other result (a driver that cannot compile this SPIR-V, memory
// exhausted while compiling) is a PlanError naming the kernel and whether our access checks were
// instrumented in, so the case fails with that reason and an isolated worker is not restarted.
[[noreturn]] void throw_pipeline_build_error(int result, const std::string& what, const std::string& label,
                                             bool access_checked);

struct RunResult {
  // Per dispatch, between timestamps written at the bottom of the pipe before and after it
  // (empty if the queue has no timestamps, and with a Repeat).
  std::vector<double> gpu_ms;
  // With a Repeat: per copy of the whole sequence, in order.
  std::vector<double> cold_ms, warm_ms;
  double warmup_ms = 0;  // the warm-up fills, all together
  double wall_ms = 0;  // submit to fence, on the host's steady clock
  // Per dispatch with check_access that made an out-of-range access: "label: what and where"
  // (the highest-ranked violated site of the kernel; one line per dispatch).
  std::vector<std::string> access_violations;
  // Beside each: true when it is a NaN operand of min / max / clamp (the lowest rank), which a
  // case with non-finite inputs may deliver legitimately (run_case.cpp).
  std::vector<bool> nan_operand;
};

class Context {
 public:
  // `device`: "" (the first device; a discrete GPU is preferred over a CPU driver), an index
  // ("1") or a case-insensitive substring of the name ("llvmpipe", "H100"). Throws moe::Error
  // listing the devices when nothing matches or there is no Vulkan.
  // Where buffers live. Readback (the default): host-cached system memory first, so the host's
  // reads (outputs, guard regions, the untouched-input check) run at memory speed; on a discrete
  // GPU the kernels then read over PCIe, which is right for correctness and wrong for timing.
  // DeviceSpeed (--perf): device-local memory first, the kind the host does not map (where
  // engines keep weights; also on GPUs without a resizable BAR) before host-visible device-local,
  // so GPU timestamps measure the kernel at device bandwidth. On lavapipe both are the same memory.
  enum class Memory { Readback, DeviceSpeed };
  explicit Context(const std::string& device = "", Memory memory = Memory::Readback);
  ~Context();
  const DeviceInfo& info() const;
  Buffer make_buffer(size_t bytes, size_t guard_bytes = 4096);
  // Records the dispatches in order with a compute->compute memory barrier (shader write ->
  // shader read|write) between consecutive ones and a shader write -> host read barrier at
  // the end, submits, and waits at most `timeout_ms` of wall-clock time; on a CPU driver, whose
  // threads in this process run the sequence, then a grace of as much CPU time on its busiest
  // thread (thread_cpu.h, JobWatch: the machine's load does not decide; 10x the limit at most). A
  // timeout throws moe::Error "kernel hung or too slow: <labels> did not finish within N ms". The abandoned sequence keeps its
  // buffers alive; the next run() first waits up to its own timeout for it to end (and throws
  // if it has not), and ~Context waits up to a minute, then leaks the device rather than free
  // memory a kernel may still write.
  // With `repeat` (cold + warm > 0) the sequence runs that many times instead (see Repeat); the
  // timeout covers them all.
  // Every pipeline new to this Context is first compiled apart (a CPU driver compiles at the first
  // dispatch): an empty dispatch of its own under compile_limit_ms(timeout_ms), or the limit set
  // here (0: that default). Past it, run() throws "the driver did not finish compiling <labels>
  // ...; the kernel never ran".
  RunResult run(const std::vector<Dispatch>& sequence, uint64_t timeout_ms = 10000, const Repeat& repeat = {});
  void set_compile_limit(uint64_t ms);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The limit on the driver's compile of the pipelines new to a run: on a CPU driver, the CPU time
// of its busiest thread since the compile's submit (10x in wall-clock time at most), on a GPU,
// wall-clock time. At least 5 minutes, never less than the dispatch's limit: a compile is no
// verdict on the kernel, and a cold one (Mesa's shader cache empty, as on a fresh CI machine) of
// a checked bundled chain at subgroup 4 took 23 s of CPU on a 2-core Zen 5, beside other work 80 s
// of wall-clock time (records/runs/2026-12-07-compile-first-and-pch.md).
uint64_t compile_limit_ms(uint64_t timeout_ms);

// On: while any Context's sequence runs (submit to fence), every block this process mallocs starts
// as bytes 0xFE (glibc's M_PERTURB) — a CPU driver's workgroup shared memory among them, so a
// kernel reading shared memory it never wrote computes with -1.7e38 instead of the zeros a fresh
// allocation often holds. Only then: the fill also costs every host allocation (a third of the
// f64 truth's time for the large cases), which needs none of it.
void poison_dispatch_malloc(bool on);

}  // namespace moe::vk
