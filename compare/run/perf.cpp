// --perf (perf.h): the stream figure, the cold and warm repeats, and the report's device figures.
#include "compare/run/perf.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <span>
#include <string>

#include "compare/manifest/manifest.h"
#include "compare/report/report.h"
#include "core/check.h"

namespace moe::compare {

uint32_t stream_copies(uint64_t bytes, uint64_t span, double once_ms) {
  const uint64_t to_span = bytes == 0 ? 1 : (span + bytes - 1) / bytes;
  const double by_time = once_ms > 0 ? std::floor(20.0 / once_ms) : 64.0;
  return uint32_t(std::clamp<double>(std::min<double>(double(to_span), by_time), 1.0, 64.0));
}

namespace {

// The byte range of each buffer that `seq` binds: [first offset, last end).
std::map<vk::Buffer*, std::pair<uint64_t, uint64_t>> bound_extents(const std::vector<vk::Dispatch>& seq) {
  std::map<vk::Buffer*, std::pair<uint64_t, uint64_t>> extents;
  for (const vk::Dispatch& d : seq)
    for (const vk::Binding& b : d.bindings) {
      const uint64_t end = b.range ? b.offset + b.range : b.buffer->size();
      auto [it, fresh] = extents.try_emplace(b.buffer, b.offset, end);
      if (!fresh) it->second = {std::min(it->second.first, b.offset), std::max(it->second.second, end)};
    }
  return extents;
}

}  // namespace

uint64_t bound_bytes(const std::vector<vk::Dispatch>& seq) {
  uint64_t bytes = 0;
  for (const auto& [buf, ext] : bound_extents(seq)) bytes += ext.second - ext.first;
  return bytes;
}

Rotation rotate(vk::Context& ctx, const std::vector<vk::Dispatch>& seq, uint32_t k) {
  const auto extents = bound_extents(seq);
  Rotation rot;
  rot.copies.reserve(extents.size() * (std::max(k, 1u) - 1));  // no reallocation: `stream` points in
  std::map<vk::Buffer*, size_t> first_copy;                   // index of a buffer's copy 1 in `copies`
  std::vector<uint8_t> host;
  for (const auto& [buf, ext] : extents) {
    if (k <= 1) break;
    const uint64_t n = ext.second - ext.first;
    host.resize(n);
    buf->download(host.data(), n, ext.first);
    first_copy[buf] = rot.copies.size();
    for (uint32_t j = 1; j < k; ++j) {
      rot.copies.push_back(ctx.make_buffer(std::max<uint64_t>(n, 4)));
      rot.copies.back().upload(host.data(), n);
    }
  }
  for (uint32_t j = 0; j < std::max(k, 1u); ++j)
    for (vk::Dispatch d : seq) {
      if (j > 0)
        for (vk::Binding& b : d.bindings) {
          const uint64_t lo = extents.at(b.buffer).first;
          b.buffer = &rot.copies[first_copy.at(b.buffer) + (j - 1)];
          b.offset -= lo;
        }
      rot.stream.push_back(std::move(d));
    }
  return rot;
}

StreamTiming time_stream(vk::Context& ctx, const std::vector<vk::Dispatch>& seq, double once_ms, uint64_t span,
                         uint32_t warmup, uint64_t timeout_ms) {
  const uint64_t bytes = bound_bytes(seq);
  StreamTiming st;
  st.copies = stream_copies(bytes, span, once_ms);
  st.cold = uint64_t(st.copies) * bytes >= span;
  const Rotation rot = rotate(ctx, seq, st.copies);
  const std::vector<vk::Dispatch>& stream = rot.stream;
  const double batch_ms = std::max(once_ms, 1e-3) * st.copies;
  const uint32_t batches = uint32_t(std::clamp(std::round(20.0 / batch_ms), 3.0, 25.0));
  const vk::RunResult rr = ctx.run(stream, timeout_ms * (uint64_t(batches) * st.copies + 1) + 10000,
                                   {.warm = batches, .flush_bytes = warmup > 0 ? span : 0, .warmup = warmup, .flush_reader = {}});
  if (rr.warm_ms.size() != batches) return StreamTiming{};  // no timestamps
  std::vector<double> per(rr.warm_ms);
  for (double& ms : per) ms /= st.copies;
  st.ms = median_of(per);
  st.lo = *std::min_element(per.begin(), per.end());
  st.hi = *std::max_element(per.begin(), per.end());
  return st;
}

namespace {

// Bytes a cache flush fills (vk::Repeat): on a GPU 256 MiB, five times the 50 MB L2 of an H100 or
// H200 and more than any GPU's last-level cache we know of; on a CPU driver twice the host's
// largest cache (sysfs), 64 MiB where it cannot be read (the flush reader reads at most a storage
// buffer's range of it: vk::Context::run). MOE_PERF_FLUSH_MB overrides it (0: none,
// the "cold" runs then differ from the warm ones only by their place in the batch).
uint64_t flush_bytes(const vk::DeviceInfo& info) {
  if (const char* e = std::getenv("MOE_PERF_FLUSH_MB")) return uint64_t(std::strtoull(e, nullptr, 10)) << 20;
  if (info.type != "cpu") return uint64_t(256) << 20;
  uint64_t largest = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    uint64_t v = 0;
    std::string unit;
    if (!(f >> v)) continue;
    f >> unit;
    largest = std::max(largest, v << (unit == "M" ? 20 : unit == "K" ? 10 : 0));
  }
  return largest ? 2 * largest : uint64_t(64) << 20;
}

// Untimed fills of the flush buffer before the timed runs (vk::Repeat::warmup), ~300 ms of them on
// a GPU: an H100 idle for the seconds the host spends on a case's truth drops to 345 MHz, and 100 ms
// of fills did not bring a matvec back to its working speed where 300 ms did (records/benchmarks-history.md,
// "Timing method"). The first batch of a process uses 3000 fills (300 ms at 3 TB/s) and measures
// them; later ones use as many as last took 300 ms. None on a CPU driver. MOE_PERF_WARMUP=N fixes N.
double g_fill_ms = 0;  // one warm-up fill, as last measured in this process
uint32_t warmup_fills(const vk::DeviceInfo& info) {
  if (const char* e = std::getenv("MOE_PERF_WARMUP")) return uint32_t(std::strtoul(e, nullptr, 10));
  if (info.type == "cpu") return 0;
  return g_fill_ms > 0 ? uint32_t(std::clamp(300.0 / g_fill_ms, 100.0, 100000.0)) : 3000;
}

// The flush reader (vk::Repeat::flush_reader): every lane xors a strided share of the scratch
// buffer; the store, which keeps the loads, needs all four words of a lane's xor to differ as no
// fill pattern's can (a fill repeats one word) and practically never happens on other data.
std::span<const uint32_t> flush_reader_spirv() {
  static const std::vector<uint32_t> spirv = [] {
    KernelEntry k;
    k.name = "flush_reader";
    return compile_glsl(R"(#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer F { uvec4 f[]; };
layout(push_constant) uniform P { uint words; } pc;
void main() {
  uvec4 a = uvec4(0u);
  for (uint i = gl_GlobalInvocationID.x; i < pc.words; i += gl_NumWorkGroups.x * 256u) a ^= f[i];
  if (a.x == 0x9E3779B9u && a.y == 0x7F4A7C15u && a.z == 0x85EBCA6Bu && a.w == gl_GlobalInvocationID.x) f[0] = a;
}
)", "flush_reader.comp", k, false, true);
  }();
  return spirv;
}

// The stream figure (time_stream) after the cold and warm runs; MOE_PERF_STREAM=0 leaves it out.
bool stream_wanted() {
  const char* e = std::getenv("MOE_PERF_STREAM");
  return !(e && std::string(e) == "0");
}

}  // namespace

bool flush_by_read() {
  const char* e = std::getenv("MOE_PERF_FLUSH");
  return !(e && std::string(e) == "fill");
}

// --perf: after everything was decided (a kernel updating state in place advances it; nothing is
// compared any more), the case's dispatches again, without the access checks (timed as engines
// run them), as one vk::Repeat: `runs` cold copies, each after a cache flush, then as many warm
// ones, in one submission, so that neither the host nor an idle GPU sits between them and the
// figure does not depend on what the process did before (docs/benchmarks.md). runs: enough for
// ~20 ms of kernel time at the case's first run, at least 5, at most 25.
// MOE_PERF_METHOD=submits times each run in its own submission instead, without flushes (the
// method before 2026-11-25, kept to compare the two): its median goes to gpu_ms.
std::string time_repeats(vk::Context& ctx, const std::vector<vk::Dispatch>& seq, uint64_t timeout_ms, CaseResult& r) {
  // The kernels as engines run them: no instrumentation (MOE_PERF_POISON=1 keeps the poisoned
  // locals of the correctness runs, to measure what they cost: records/device-runs.md, 2026-11-25 04:43).
  std::vector<vk::Dispatch> bare = seq;
  const bool poison = std::getenv("MOE_PERF_POISON") && std::string(std::getenv("MOE_PERF_POISON")) == "1";
  for (vk::Dispatch& d : bare) d.check_access = false, d.poison_locals = poison;
  const uint32_t runs = uint32_t(std::clamp(20.0 / std::max(r.gpu_ms, 1e-3), 5.0, 25.0));
  const char* method = std::getenv("MOE_PERF_METHOD");
  try {
    if (method && std::string(method) == "submits") {
      std::vector<double> times;
      for (uint32_t i = 0; i < runs; ++i) {
        double ms = 0;
        for (double t : ctx.run(bare, timeout_ms).gpu_ms) ms += t;
        times.push_back(ms);
      }
      r.gpu_ms = median_of(times);
      return "";
    }
    const uint32_t fills = warmup_fills(ctx.info());
    const vk::RunResult rr =
        ctx.run(bare, timeout_ms * (2 * runs + 1) + 10000,
                {.cold = runs,
                 .warm = runs,
                 .flush_bytes = flush_bytes(ctx.info()),
                 .warmup = fills,
                 .flush_reader = flush_by_read() ? flush_reader_spirv() : std::span<const uint32_t>{}});
    if (fills > 0 && rr.warmup_ms > 0) g_fill_ms = rr.warmup_ms / fills;
    if (rr.cold_ms.size() != runs || rr.warm_ms.size() != runs) return "timing repeat: no timestamps";
    const auto [clo, chi] = std::minmax_element(rr.cold_ms.begin(), rr.cold_ms.end());
    const auto [wlo, whi] = std::minmax_element(rr.warm_ms.begin(), rr.warm_ms.end());
    r.gpu_ms = median_of(rr.cold_ms);
    r.timing = {.runs = int(runs), .cold_lo = *clo, .cold_hi = *chi, .warm = median_of(rr.warm_ms),
                .warm_lo = *wlo, .warm_hi = *whi};
    if (stream_wanted()) {
      const StreamTiming st = time_stream(ctx, bare, r.gpu_ms, flush_bytes(ctx.info()), warmup_fills(ctx.info()), timeout_ms);
      r.timing.stream = st.ms, r.timing.stream_lo = st.lo, r.timing.stream_hi = st.hi;
      r.timing.stream_copies = int(st.copies), r.timing.stream_cold = st.cold;
    }
  } catch (const Error& e) {
    return std::string("timing repeat: ") + e.what();
  }
  return "";
}

namespace {

// A compute kernel copying uvec4s between two buffers, grid-strided: what a kernel moving the
// same bytes at best achieves, launch and all.
const std::vector<uint32_t>& copy_kernel() {
  static const std::vector<uint32_t> spirv = [] {
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
    return compile_glsl(src, "copy_bandwidth.comp", k, false, true);
  }();
  return spirv;
}

vk::Dispatch copy_dispatch(vk::Buffer& a, vk::Buffer& b, uint64_t bytes) {
  const uint32_t n = uint32_t(bytes / 16);
  vk::Dispatch d;
  d.label = "copy_bandwidth", d.spirv = copy_kernel();
  d.bindings = {{0, &a, 0, bytes}, {1, &b, 0, bytes}};
  d.push_constants.resize(4);
  std::memcpy(d.push_constants.data(), &n, 4);
  d.groups[0] = std::max<uint32_t>(1, std::min<uint32_t>((n + 255) / 256, 65535u));
  return d;
}

// The device's copy bandwidth, measured the way kernels see memory: a compute kernel copying
// uvec4s between two buffers of the runner (the same memory type kernels read), best of 5.
double copy_bandwidth_gbs(vk::Context& ctx) {
  const std::vector<uint32_t> spirv = copy_kernel();
  size_t bytes = size_t(256) << 20;
  bytes = std::min<size_t>(bytes, size_t(ctx.info().max_storage_buffer_range) / 2);
  bytes &= ~size_t(15);
  vk::Buffer a = ctx.make_buffer(bytes), b = ctx.make_buffer(bytes);
  a.fill_u32(1u);
  const vk::Dispatch d = copy_dispatch(a, b, bytes);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    const vk::RunResult rr = ctx.run({d}, 60000);
    if (rr.gpu_ms.empty() || rr.gpu_ms[0] <= 0) return 0;
    best = std::max(best, 2.0 * double(bytes) / (rr.gpu_ms[0] * 1e6));
  }
  return best;
}

// The device's f32 FMA rate, the ceiling of compute-bound kernels (prefill matmuls): every
// invocation runs 8 independent fma chains (enough to hide the FMA latency on any GPU) whose
// multiplier and addend come from push constants (nothing to fold), over enough workgroups to
// fill every core; the chain length doubles until a run takes >= 20 ms; best of 5 runs there
// (the first ones may run before the clocks are up).
double fma_peak_gflops(vk::Context& ctx) {
  const char* src = R"(#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) writeonly buffer O { float o[]; };
layout(push_constant) uniform Push { uint iters; float m; float c; } pc;
void main() {
  const float s = float(gl_GlobalInvocationID.x & 1023u) * 1e-3;
  float a0 = s, a1 = s + 0.1, a2 = s + 0.2, a3 = s + 0.3, a4 = s + 0.4, a5 = s + 0.5, a6 = s + 0.6, a7 = s + 0.7;
  for (uint i = 0u; i < pc.iters; ++i) {
    a0 = fma(a0, pc.m, pc.c); a1 = fma(a1, pc.m, pc.c); a2 = fma(a2, pc.m, pc.c); a3 = fma(a3, pc.m, pc.c);
    a4 = fma(a4, pc.m, pc.c); a5 = fma(a5, pc.m, pc.c); a6 = fma(a6, pc.m, pc.c); a7 = fma(a7, pc.m, pc.c);
  }
  o[gl_GlobalInvocationID.x] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}
)";
  KernelEntry k;
  k.name = "fma_peak";
  const std::vector<uint32_t> spirv = compile_glsl(src, "fma_peak.comp", k, false, true);
  const uint32_t groups = ctx.info().type == "cpu" ? 64u : 4096u, threads = groups * 256u;
  vk::Buffer o = ctx.make_buffer(size_t(threads) * 4);
  vk::Dispatch d;
  d.label = "fma_peak", d.spirv = spirv;
  d.bindings = {{0, &o, 0, size_t(threads) * 4}};
  d.groups[0] = groups;
  d.push_constants.resize(12);
  const float m = 0.9999f, c = 1e-4f;
  std::memcpy(d.push_constants.data() + 4, &m, 4);
  std::memcpy(d.push_constants.data() + 8, &c, 4);
  double best = 0;
  for (uint32_t iters = 64, tries = 0; iters <= (1u << 24); ) {
    std::memcpy(d.push_constants.data(), &iters, 4);
    const vk::RunResult rr = ctx.run({d}, 60000);
    if (rr.gpu_ms.empty() || rr.gpu_ms[0] <= 0) return 0;
    const double ms = rr.gpu_ms[0];
    if (ms < 20.0) {
      iters *= 2;
      continue;
    }
    best = std::max(best, 2.0 * 8.0 * double(iters) * double(threads) / (ms * 1e6));
    if (++tries == 5) break;
  }
  return best;
}

// Per distinct byte count of the timed cases, a copy kernel moving as many bytes (reading half,
// writing half), timed by the cases' own method (time_repeats: cold after a flush, warm): the
// ceiling of a kernel of that size, launch and all. A case's "% of copy" compares it with the
// device's streaming bandwidth; "% of a same-size copy" with what any kernel moving its bytes
// achieves here, which for a matvec of a few MB is far below streaming (docs/benchmarks.md).
std::map<double, SameSizeCopy> same_size_copy_ms(vk::Context& ctx, std::span<const CaseResult> results, uint64_t timeout_ms) {
  std::set<uint64_t> sizes;
  for (const CaseResult& r : results)
    if (r.gpu_ms > 0 && r.timing.runs > 0 && r.bytes >= 64) sizes.insert(uint64_t(r.bytes / 2) & ~uint64_t(15));
  std::map<double, SameSizeCopy> out;
  if (sizes.empty()) return out;
  vk::Buffer a = ctx.make_buffer(*sizes.rbegin()), b = ctx.make_buffer(*sizes.rbegin());
  a.fill_u32(1u);
  for (uint64_t half : sizes) {
    const std::vector<vk::Dispatch> seq = {copy_dispatch(a, b, half)};
    CaseResult t;
    const vk::RunResult once = ctx.run(seq, timeout_ms);
    if (once.gpu_ms.empty() || once.gpu_ms[0] <= 0) return {};
    t.gpu_ms = once.gpu_ms[0];
    if (!time_repeats(ctx, seq, timeout_ms, t).empty() || t.timing.runs == 0) return {};
    out[double(half)] = {.cold = t.gpu_ms, .stream = std::max(t.timing.stream, 0.0)};
  }
  return out;
}

}  // namespace

void write_perf_report(std::ostream& os, const CompareOptions& opt, const std::vector<CaseResult>& results) {
  vk::Context ctx(opt.device, vk::Context::Memory::DeviceSpeed);
  const double copy = copy_bandwidth_gbs(ctx);
  const bool any_flops =
      std::any_of(results.begin(), results.end(), [](const CaseResult& r) { return r.flops > 0 && r.gpu_ms > 0; });
  const std::map<double, SameSizeCopy> same = same_size_copy_ms(ctx, results, opt.timeout_ms);
  std::map<double, SameSizeCopy> same_by_bytes;  // keyed by the case's bytes, as write_perf looks it up
  for (const CaseResult& r : results)
    if (r.bytes >= 64 && same.count(double(uint64_t(r.bytes / 2) & ~uint64_t(15))))
      same_by_bytes[r.bytes] = same.at(double(uint64_t(r.bytes / 2) & ~uint64_t(15)));
  write_perf(os, results, flush_by_read(), copy, any_flops ? fma_peak_gflops(ctx) : 0.0, same_by_bytes);
}

}  // namespace moe::compare
