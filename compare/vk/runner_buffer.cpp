// Memory and buffers of the Vulkan runner: the memory type a buffer lives in, guard regions,
// the pool of freed buffers, and host access (memcpy where the host maps the memory, copies
// through a staging buffer where it does not).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "compare/vk/runner_state.h"
#include "core/check.h"

namespace moe::vk {
namespace detail {

// The guard's byte at position j past the usable end. Each 32-bit word of the guard is a quiet
// NaN, 0x7FC0pppp, with a position-dependent payload p: neither a zero fill, a constant store
// nor a shifted copy of the guard itself leaves it intact, and a kernel that reads past the end
// of a float (or bf16-pair) buffer computes with NaN, which fails visibly, instead of with
// whatever happened to be there. The payload also depends on the buffer (`salt`): arithmetic
// passes a NaN's payload through, so a kernel that reads past the end of one buffer and writes
// past the end of another at the same offset (y[i] = x[i] * w[i] for i beyond both) would
// otherwise store exactly the guard it overwrote.
uint8_t guard_byte(size_t j, uint32_t salt) {
  // (payload odd: never the canonical NaN 0x7FC00000 a kernel might store)
  const uint32_t h = (static_cast<uint32_t>(j / 4) + salt * 0x85EBCA6Bu) * 0x9E3779B1u;
  const uint32_t word = 0x7FC00001u | (h >> 16);
  return static_cast<uint8_t>(word >> (8 * (j % 4)));
}


uint32_t next_guard_salt() {
  static std::atomic<uint32_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace {

// A memory type of `req` with all of `want`, ranked by `rank` (lower first, negative: never).
std::vector<uint32_t> memory_types(const Core& core, const ::vk::MemoryRequirements& req,
                                   ::vk::MemoryPropertyFlags want, int (*rank)(::vk::MemoryPropertyFlags, int),
                                   int mode) {
  std::vector<std::pair<int, uint32_t>> ranked;
  for (uint32_t i = 0; i < core.memory.memoryTypeCount; ++i) {
    const auto flags = core.memory.memoryTypes[i].propertyFlags;
    if (!(req.memoryTypeBits >> i & 1u) || (flags & want) != want) continue;
    if (const int r = rank(flags, mode); r >= 0) ranked.emplace_back(r, i);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<uint32_t> out;
  for (auto [r, i] : ranked) out.push_back(i);
  return out;
}

constexpr auto kHost = ::vk::MemoryPropertyFlagBits::eHostVisible | ::vk::MemoryPropertyFlagBits::eHostCoherent;

// MOE_VK_MEMORY: "bar" keeps --perf buffers in host-visible device-local memory (resizable BAR,
// the placement before 2026-11-25, for comparisons); "staged" reaches every buffer through
// staging copies even where the host could map it (a test hook: lavapipe's memory is all
// host-visible, so the staged path would otherwise run only on discrete GPUs).
const std::string& memory_override() {
  static const std::string v = [] {
    const char* e = std::getenv("MOE_VK_MEMORY");
    return std::string(e ? e : "");
  }();
  return v;
}

// Where a buffer lives, by Context::Memory (mode 0 Readback, 1 DeviceSpeed, 2 DeviceSpeed in BAR
// memory); lower first, negative never. Readback: memory the host maps (host-visible and
// coherent: upload and read-back are memcpy), host-cached and not device-local first (fast host
// reads), then other non-local, then device-local. DeviceSpeed: device-local memory the host
// does not map first: where engines keep weights, and on an H100 the only placement whose
// timings do not depend on what the process did before (docs/benchmarks.md, "What the figures mean");
// the host reaches it through staging copies. Then device-local host-visible (BAR), then the
// rest.
int memory_rank(::vk::MemoryPropertyFlags f, int mode) {
  const bool host = (f & kHost) == kHost, local = bool(f & ::vk::MemoryPropertyFlagBits::eDeviceLocal);
  const bool cached = bool(f & ::vk::MemoryPropertyFlagBits::eHostCached);
  if (mode == 0) return !host ? -1 : !local && cached ? 0 : !local ? 1 : 2;
  if (mode == 2) return !host ? -1 : local ? 0 : 1;
  return local && !host ? 0 : local ? 1 : host ? 2 : 3;
}

void lay_guard(Allocation& a, size_t bytes, size_t guard_bytes) {
  std::vector<uint8_t> g(guard_bytes);
  for (size_t j = 0; j < guard_bytes; ++j) g[j] = guard_byte(j, a.salt);
  a.write(bytes, g.data(), g.size());
}

}  // namespace

// Chunks of at most 64 MiB, one submission each, waited for: buffers are reached from the host
// between runs only (uploads before, read-back after), never while a run is in flight. The
// barrier first makes earlier submissions' shader and transfer writes visible to the copy; the
// barrier last makes the copy's writes visible to the host and to later submissions.
void Core::transfer(const Allocation& a, size_t offset, uint8_t* host, size_t bytes, bool to_device) {
  constexpr size_t kChunk = size_t(64) << 20;
  if (bytes == 0) return;
  const size_t cap = std::min(bytes, kChunk);
  if (!*transfer_pool)
    transfer_pool = ::vk::raii::CommandPool(
        device, ::vk::CommandPoolCreateInfo{.flags = ::vk::CommandPoolCreateFlagBits::eTransient,
                                            .queueFamilyIndex = probe.queue_family});
  if (staging_size < cap) {
    staging_mapped = nullptr;
    staging_memory = nullptr;
    staging = ::vk::raii::Buffer(device, ::vk::BufferCreateInfo{.size = cap,
                                                                .usage = ::vk::BufferUsageFlagBits::eTransferSrc |
                                                                         ::vk::BufferUsageFlagBits::eTransferDst,
                                                                .sharingMode = ::vk::SharingMode::eExclusive});
    const ::vk::MemoryRequirements req = staging.getMemoryRequirements();
    // Host-cached first: read-back is a host read of it.
    const auto rank = [](::vk::MemoryPropertyFlags f, int) {
      return f & ::vk::MemoryPropertyFlagBits::eHostCached ? 0 : 1;
    };
    const std::vector<uint32_t> types = memory_types(*this, req, kHost, rank, 0);
    MOE_CHECK(!types.empty(), "vulkan: " << probe.info.name << " offers no host-visible memory for a staging buffer");
    staging_memory = ::vk::raii::DeviceMemory(
        device, ::vk::MemoryAllocateInfo{.allocationSize = req.size, .memoryTypeIndex = types[0]});
    staging.bindMemory(*staging_memory, 0);
    staging_mapped = static_cast<uint8_t*>(staging_memory.mapMemory(0, VK_WHOLE_SIZE));
    staging_size = cap;
  }
  const ::vk::MemoryBarrier before{.srcAccessMask = ::vk::AccessFlagBits::eMemoryWrite,
                                   .dstAccessMask = ::vk::AccessFlagBits::eTransferRead |
                                                    ::vk::AccessFlagBits::eTransferWrite};
  const ::vk::MemoryBarrier after{.srcAccessMask = ::vk::AccessFlagBits::eTransferWrite,
                                  .dstAccessMask = ::vk::AccessFlagBits::eHostRead | ::vk::AccessFlagBits::eMemoryRead};
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(cap, bytes - done);
    if (to_device) std::memcpy(staging_mapped, host + done, n);
    ::vk::raii::CommandBuffer cmd = std::move(device.allocateCommandBuffers(::vk::CommandBufferAllocateInfo{
        .commandPool = *transfer_pool, .level = ::vk::CommandBufferLevel::ePrimary, .commandBufferCount = 1})[0]);
    cmd.begin(::vk::CommandBufferBeginInfo{.flags = ::vk::CommandBufferUsageFlagBits::eOneTimeSubmit});
    cmd.pipelineBarrier(::vk::PipelineStageFlagBits::eAllCommands, ::vk::PipelineStageFlagBits::eTransfer, {}, before,
                        nullptr, nullptr);
    const ::vk::BufferCopy region{.srcOffset = to_device ? 0 : offset + done,
                                  .dstOffset = to_device ? offset + done : 0,
                                  .size = n};
    if (to_device)
      cmd.copyBuffer(*staging, *a.buffer, region);
    else
      cmd.copyBuffer(*a.buffer, *staging, region);
    cmd.pipelineBarrier(::vk::PipelineStageFlagBits::eTransfer,
                        ::vk::PipelineStageFlagBits::eHost | ::vk::PipelineStageFlagBits::eAllCommands, {}, after,
                        nullptr, nullptr);
    cmd.end();
    const ::vk::raii::Fence fence(device, ::vk::FenceCreateInfo{});
    const ::vk::CommandBuffer cb = *cmd;
    queue.submit(::vk::SubmitInfo{.commandBufferCount = 1, .pCommandBuffers = &cb}, *fence);
    MOE_CHECK(device.waitForFences(*fence, VK_TRUE, 60'000'000'000ull) == ::vk::Result::eSuccess,
              "vulkan: a copy of " << n << " bytes " << (to_device ? "to" : "from") << " the device took over 60 s on "
                                   << probe.info.name);
    if (!to_device) std::memcpy(host + done, staging_mapped, n);
    done += n;
  }
}

void Allocation::write(size_t offset, const void* data, size_t bytes) {
  if (bytes == 0) return;  // a buffer without guard bytes: data may be null (memcpy's contract)
  if (mapped)
    std::memcpy(mapped + offset, data, bytes);
  else
    core->transfer(*this, offset, static_cast<uint8_t*>(const_cast<void*>(data)), bytes, true);
}

void Allocation::read(size_t offset, void* data, size_t bytes) const {
  if (bytes == 0) return;
  if (mapped)
    std::memcpy(data, mapped + offset, bytes);
  else
    core->transfer(*this, offset, static_cast<uint8_t*>(data), bytes, false);
}

}  // namespace detail

using namespace detail;

Buffer::Buffer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Buffer::~Buffer() = default;
Buffer::Buffer(Buffer&&) noexcept = default;
Buffer& Buffer::operator=(Buffer&&) noexcept = default;

size_t Buffer::size() const { return live(impl_.get()).size; }

bool Buffer::device_local() const { return live(impl_.get()).alloc->device_local; }

Buffer::Impl& Buffer::live(Impl* impl) {
  MOE_CHECK(impl, "vulkan buffer: used after being moved from");
  return *impl;
}

void Buffer::upload(const void* data, size_t bytes, size_t offset) {
  Impl& m = live(impl_.get());
  MOE_CHECK(offset <= m.size && bytes <= m.size - offset, "vulkan buffer: upload of " << bytes << " bytes at offset "
                                                                                      << offset << " overruns its "
                                                                                      << m.size << " bytes");
  if (bytes) m.alloc->write(offset, data, bytes);
}

void Buffer::download(void* data, size_t bytes, size_t offset) const {
  const Impl& m = live(impl_.get());
  MOE_CHECK(offset <= m.size && bytes <= m.size - offset, "vulkan buffer: download of " << bytes << " bytes at offset "
                                                                                        << offset << " overruns its "
                                                                                        << m.size << " bytes");
  if (bytes) m.alloc->read(offset, data, bytes);
}

void Buffer::fill_u32(uint32_t pattern) {
  Impl& m = live(impl_.get());
  uint8_t bytes[4];
  std::memcpy(bytes, &pattern, 4);
  std::vector<uint8_t> fill(m.size);
  for (size_t i = 0; i < m.size; ++i) fill[i] = bytes[i % 4];  // a tail shorter than a word gets the first bytes
  m.alloc->write(0, fill.data(), fill.size());
}

bool Buffer::guard_intact() const {
  const Impl& m = live(impl_.get());
  std::vector<uint8_t> g(m.guard);
  m.alloc->read(m.size, g.data(), g.size());
  for (size_t j = 0; j < m.guard; ++j)
    if (g[j] != guard_byte(j, m.alloc->salt)) return false;
  return true;
}

Buffer Context::make_buffer(size_t bytes, size_t guard_bytes) {
  MOE_CHECK(bytes > 0, "vulkan: make_buffer of 0 bytes (Vulkan buffers cannot be empty)");
  MOE_CHECK(bytes <= SIZE_MAX - guard_bytes,
            "vulkan: make_buffer: " << bytes << " + " << guard_bytes << " bytes overflows");
  if (std::shared_ptr<Allocation> reused = impl_->pool->take(bytes, guard_bytes)) {
    // A kernel of an earlier case may have written past its end: the guard is laid again.
    lay_guard(*reused, bytes, guard_bytes);
    auto impl = std::make_unique<Buffer::Impl>();
    impl->alloc = std::move(reused);
    impl->size = bytes, impl->guard = guard_bytes, impl->pool = impl_->pool;
    return Buffer(std::move(impl));
  }
  Core& core = *impl_->core;
  auto alloc = std::make_shared<Allocation>();
  alloc->core = impl_->core;
  const size_t total = bytes + guard_bytes;
  try {
    alloc->buffer =
        ::vk::raii::Buffer(core.device, ::vk::BufferCreateInfo{.size = total,
                                                               .usage = ::vk::BufferUsageFlagBits::eStorageBuffer |
                                                                        ::vk::BufferUsageFlagBits::eUniformBuffer |
                                                                        ::vk::BufferUsageFlagBits::eTransferSrc |
                                                                        ::vk::BufferUsageFlagBits::eTransferDst,
                                                               .sharingMode = ::vk::SharingMode::eExclusive});
    const ::vk::MemoryRequirements req = alloc->buffer.getMemoryRequirements();
    const int mode = impl_->memory == Memory::Readback ? 0 : memory_override() == "bar" ? 2 : 1;
    const std::vector<uint32_t> candidates = memory_types(core, req, {}, memory_rank, mode);
    MOE_CHECK(!candidates.empty(), "vulkan: " << info().name << " offers no memory type for storage buffers"
                                              << (mode != 1 ? " that the host can map" : ""));
    std::string last_error;
    uint32_t alloc_type = 0;
    // Out of device memory (a small BAR heap): free what the pool holds and retry the same type
    // once, then try the next type.
    for (size_t c = 0; c < candidates.size() && !*alloc->memory;) {
      const uint32_t type = candidates[c];
      try {
        alloc->memory = ::vk::raii::DeviceMemory(
            core.device, ::vk::MemoryAllocateInfo{.allocationSize = req.size, .memoryTypeIndex = type});
        alloc->device_local =
            bool(core.memory.memoryTypes[type].propertyFlags & ::vk::MemoryPropertyFlagBits::eDeviceLocal);
        alloc_type = type;
      } catch (const ::vk::OutOfDeviceMemoryError& e) {
        last_error = e.what();
        if (!impl_->pool->clear()) ++c;
      } catch (const ::vk::OutOfHostMemoryError& e) {
        last_error = e.what();
        ++c;
      }
    }
    MOE_CHECK(*alloc->memory, "vulkan: cannot allocate " << total << " bytes of device memory: " << last_error);
    alloc->buffer.bindMemory(*alloc->memory, 0);
    if ((core.memory.memoryTypes[alloc_type].propertyFlags & kHost) == kHost && memory_override() != "staged")
      alloc->mapped = static_cast<uint8_t*>(alloc->memory.mapMemory(0, VK_WHOLE_SIZE));
  } catch (const ::vk::SystemError& e) {
    MOE_FAIL("vulkan: make_buffer(" << bytes << " + guard " << guard_bytes << "): " << e.what());
  }
  alloc->salt = next_guard_salt();
  lay_guard(*alloc, bytes, guard_bytes);
  auto impl = std::make_unique<Buffer::Impl>();
  impl->alloc = std::move(alloc);
  impl->size = bytes;
  impl->guard = guard_bytes;
  impl->pool = impl_->pool;
  return Buffer(std::move(impl));
}

}  // namespace moe::vk
