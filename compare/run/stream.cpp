#include "compare/run/stream.h"

#include "compare/report/report.h"

#include <algorithm>
#include <cmath>
#include <map>

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

}  // namespace moe::compare
