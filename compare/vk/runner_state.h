// Internal to the Vulkan runner: the state behind Context and Buffer, shared by runner.cpp (devices,
// pipelines, runs) and runner_buffer.cpp (memory, buffers, host access). Not part of runner.h.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <vulkan/vulkan_raii.hpp>

#include "compare/vk/runner_internal.h"

namespace moe::vk::detail {

// The guard's byte at position j past the usable end (runner_buffer.cpp says how it is made).
uint8_t guard_byte(size_t j, uint32_t salt);

struct Allocation;

struct Core {
  ::vk::raii::PhysicalDevice physical{nullptr};
  ::vk::raii::Device device{nullptr};
  ::vk::raii::Queue queue{nullptr};
  Probe probe;
  ::vk::PhysicalDeviceMemoryProperties memory{};
  // Host access to memory the host does not map (staged allocations): copies through a
  // host-visible buffer, chunk by chunk, each one submission waited for (runner_buffer.cpp).
  ::vk::raii::CommandPool transfer_pool{nullptr};
  ::vk::raii::Buffer staging{nullptr};
  ::vk::raii::DeviceMemory staging_memory{nullptr};
  uint8_t* staging_mapped = nullptr;
  size_t staging_size = 0;
  void transfer(const Allocation& a, size_t offset, uint8_t* host, size_t bytes, bool to_device);
};

struct Allocation {
  std::shared_ptr<Core> core;  // declared first: destroyed last
  ::vk::raii::Buffer buffer{nullptr};
  ::vk::raii::DeviceMemory memory{nullptr};
  uint8_t* mapped = nullptr;  // null: staged (the host reaches it through Core::transfer)
  bool device_local = false;
  uint32_t salt = 0;  // of the guard's payloads: distinct per allocation
  void write(size_t offset, const void* data, size_t bytes);
  void read(size_t offset, void* data, size_t bytes) const;
};

uint32_t next_guard_salt();

// Freed buffers kept for reuse by make_buffer of the same size and guard: allocating device
// memory costs milliseconds on NVIDIA, and a compare run makes the same few sizes thousands of
// times. Owned by the Context (holding no reference to it), so buffers that outlive their Context
// simply free their memory. Capped in total bytes; emptied when an allocation runs out of device
// memory. MOE_VK_POOL=0 turns reuse off (to rule it out when diagnosing a driver).
struct BufferPool {
  static constexpr size_t kMaxBytes = size_t(1) << 30;
  const bool enabled = [] {
    const char* e = std::getenv("MOE_VK_POOL");
    return !(e && std::string(e) == "0");
  }();
  std::mutex mutex;
  std::multimap<std::pair<size_t, size_t>, std::shared_ptr<Allocation>> free;
  size_t bytes = 0;
  std::shared_ptr<Allocation> take(size_t size, size_t guard) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = free.find({size, guard});
    if (it == free.end()) return nullptr;
    std::shared_ptr<Allocation> a = std::move(it->second);
    free.erase(it);
    bytes -= size + guard;
    return a;
  }
  void put(size_t size, size_t guard, std::shared_ptr<Allocation> a) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!enabled || bytes + size + guard > kMaxBytes) return;  // dropped: its memory is freed
    bytes += size + guard;
    free.emplace(std::make_pair(size, guard), std::move(a));
  }
  bool clear() {  // frees every pooled allocation; false if there was none
    std::multimap<std::pair<size_t, size_t>, std::shared_ptr<Allocation>> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex);
      dropped.swap(free);
      bytes = 0;
    }
    return !dropped.empty();
  }
};

}  // namespace moe::vk::detail

namespace moe::vk {

struct Buffer::Impl {
  std::shared_ptr<detail::Allocation> alloc;
  size_t size = 0, guard = 0;
  std::weak_ptr<detail::BufferPool> pool;
  ~Impl() {
    // Only an allocation nothing else holds (a sequence still in flight keeps its own reference).
    if (alloc && alloc.use_count() == 1)
      if (std::shared_ptr<detail::BufferPool> p = pool.lock()) p->put(size, guard, std::move(alloc));
  }
};

namespace detail {

struct Pipeline {
  ::vk::raii::ShaderModule module{nullptr};
  ::vk::raii::DescriptorSetLayout set_layout{nullptr};
  ::vk::raii::PipelineLayout layout{nullptr};
  ::vk::raii::Pipeline pipeline{nullptr};
  // With Dispatch::check_access: the binding of the check buffer and its sites (none: unchecked).
  uint32_t check_binding = 0;
  std::vector<std::string> check_sites;
  std::vector<detail::RuntimeLength> check_lengths;
  bool checked() const { return !check_sites.empty(); }
  // Dispatched once already (with no workgroups): a CPU driver has compiled it (Context::run).
  bool compiled = false;
};

// A submitted sequence: what the device may still be using until `fence` signals.
struct InFlight {
  std::string labels;
  ::vk::raii::DescriptorPool pool{nullptr};
  ::vk::raii::CommandBuffer cmd{nullptr};
  ::vk::raii::QueryPool queries{nullptr};
  ::vk::raii::Fence fence{nullptr};
  std::vector<std::shared_ptr<Allocation>> buffers;
};


}  // namespace detail

struct Context::Impl {
  std::shared_ptr<detail::Core> core;
  std::shared_ptr<detail::BufferPool> pool = std::make_shared<detail::BufferPool>();
  Context::Memory memory = Context::Memory::Readback;
  ::vk::raii::CommandPool commands{nullptr};
  // Key: every input of the pipeline and its layout, SPIR-V words included (no hash collisions).
  std::map<std::string, std::unique_ptr<detail::Pipeline>> pipelines;
  // A sequence that timed out; the next run waits for it before anything else.
  std::unique_ptr<detail::InFlight> abandoned;

  // Filled before each cold copy of a Repeat (grown on demand, kept for the next).
  std::optional<Buffer> flush;

  detail::Pipeline& pipeline_for(const Dispatch& d);
  void build_pipeline(detail::Pipeline& p, const Dispatch& d, const std::vector<uint32_t>& words,
                      const std::vector<std::pair<uint32_t, bool>>& slots);
  void retire_abandoned(uint64_t timeout_ms);
  ::vk::Result submit_and_wait(detail::InFlight& job, uint64_t timeout_ms) const;
  bool compiled_in_time(detail::InFlight& job, uint64_t limit_ms) const;
  uint64_t compile_limit = 0;  // Context::set_compile_limit (0: compile_limit_ms of the run's)
  // run()'s steps.
  struct Bound {
    std::vector<detail::Pipeline*> pipes;
    std::vector<::vk::DescriptorSet> sets;
    std::vector<std::optional<Buffer>> checks;
  };
  void validate(const std::vector<Dispatch>& sequence, uint32_t* descriptors, uint32_t* uniforms) const;
  std::optional<Dispatch> flush_reader(Context& ctx, const Repeat& repeat);
  Bound bind(Context& ctx, detail::InFlight& job, const std::vector<Dispatch>& sequence, uint32_t descriptors,
             uint32_t uniforms);
  void compile_first(std::unique_ptr<detail::InFlight>& job, const std::vector<Dispatch>& sequence, const Bound& bd,
                     uint64_t timeout_ms);
  void record_copy(::vk::raii::CommandBuffer& cmd, const std::vector<Dispatch>& sequence, const Bound& bd,
                   const ::vk::raii::QueryPool* queries, uint32_t first, bool per_dispatch);
  void record_repeat(Context& ctx, detail::InFlight& job, const std::vector<Dispatch>& sequence, const Bound& bd,
                     const Repeat& repeat);
  // After the fence: what the access checks caught, and the timestamps (`stamps` of them).
  void read_access_checks(const std::vector<Dispatch>& sequence, const Bound& bd, RunResult& result) const;
  void read_timestamps(detail::InFlight& job, uint32_t stamps, const Repeat& repeat, const std::string& labels,
                       RunResult& result) const;
};

}  // namespace moe::vk
