// The Vulkan runner on Vulkan-Hpp RAII. One Core (instance, device, queue) is shared by the
// Context and by every Buffer it made, so a Buffer that outlives its Context stays valid, and a
// sequence abandoned after a timeout keeps its buffers alive until the device is done with them
// (the GPU, or lavapipe's threads, may still be writing into them).
#include "compare/vk/runner.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <vulkan/vulkan_raii.hpp>

#include "compare/vk/runner_state.h"
#include "compare/vk/thread_cpu.h"
#include "core/check.h"

namespace moe::vk {
using namespace detail;
namespace {

std::atomic<bool> g_poison_dispatch_malloc{false};

// M_PERTURB on from the first running sequence to the last one's end (Contexts of other threads).
class DispatchMallocPoison {
 public:
  DispatchMallocPoison() : on_(g_poison_dispatch_malloc.load()) {
    if (!on_) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (depth_++ == 0) mallopt(M_PERTURB, 1);
  }
  ~DispatchMallocPoison() {
    if (!on_) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (--depth_ == 0) mallopt(M_PERTURB, 0);
  }
  DispatchMallocPoison(const DispatchMallocPoison&) = delete;
  DispatchMallocPoison& operator=(const DispatchMallocPoison&) = delete;

 private:
  bool on_;
  static inline std::mutex mutex_;
  static inline int depth_ = 0;
};

// The bytes a binding views (its range, or to the end of the buffer's usable size).
uint64_t usable_range(const Binding& b) { return b.range ? b.range : b.buffer->size() - b.offset; }

std::string labels_of(const std::vector<Dispatch>& seq) {
  std::string s;
  for (const Dispatch& d : seq)
    s += (s.empty() ? "" : ", ") + (d.label.empty() ? std::string("(unlabelled)") : d.label);
  return s;
}

// The bytes the flush reader binds and reads: the flush, at most a storage buffer's range, whole uvec4s.
uint64_t flush_read_bytes(const Context& ctx, const Repeat& repeat) {
  return std::min<uint64_t>(repeat.flush_bytes, ctx.info().max_storage_buffer_range) & ~uint64_t(15);
}

}  // namespace

Context::Context(const std::string& device, Memory memory) : impl_(std::make_unique<Impl>()) {
  impl_->memory = memory;
  const std::vector<DeviceInfo> devs = list_devices();
  const int chosen = choose_device(devs, device);

  try {
    auto core = std::make_shared<Core>();
    Loader& l = loader();
    std::vector<::vk::raii::PhysicalDevice> pds = l.instance.enumeratePhysicalDevices();
    MOE_CHECK(chosen < static_cast<int>(pds.size()), "vulkan: device " << chosen << " disappeared");
    core->physical = std::move(pds[chosen]);
    core->probe = probe(core->physical, chosen, instance_api(l.ctx));
    core->memory = core->physical.getMemoryProperties();
    MOE_CHECK(core->probe.api >= VK_API_VERSION_1_1, "vulkan: the Vulkan loader offers version "
                                                         << version_string(instance_api(l.ctx))
                                                         << ", the runner needs 1.1 or newer");

    // Enable every supported feature (kernels from other engines use 16-bit storage, int8,
    // float16, subgroup size control, ...; a SPIR-V capability without its feature is invalid)
    // except robust buffer access: robustness would drop out-of-bounds writes that the guard
    // regions exist to catch, and hide out-of-bounds reads.
    const bool v12 = core->probe.api >= VK_API_VERSION_1_2, v13 = core->probe.api >= VK_API_VERSION_1_3;
    ::vk::PhysicalDeviceVulkan11Features f11{};
    ::vk::PhysicalDeviceVulkan12Features f12{};
    ::vk::PhysicalDeviceVulkan13Features f13{};
    ::vk::PhysicalDeviceSubgroupSizeControlFeatures fssc{};
    ::vk::PhysicalDeviceFeatures2 feats{};
    void** tail = &feats.pNext;
    if (v12) *tail = &f11, tail = &f11.pNext, *tail = &f12, tail = &f12.pNext;
    if (v13) *tail = &f13, tail = &f13.pNext;
    if (core->probe.size_control_ext) *tail = &fssc, tail = &fssc.pNext;
    vkGetPhysicalDeviceFeatures2(static_cast<VkPhysicalDevice>(*core->physical),
                                 reinterpret_cast<VkPhysicalDeviceFeatures2*>(&feats));
    feats.features.robustBufferAccess = VK_FALSE;
    f13.robustImageAccess = VK_FALSE;
    std::vector<const char*> extensions;
    if (core->probe.size_control_ext) extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);

    const float priority = 1.0f;
    const ::vk::DeviceQueueCreateInfo queue_info{
        .queueFamilyIndex = core->probe.queue_family, .queueCount = 1, .pQueuePriorities = &priority};
    const ::vk::DeviceCreateInfo device_info{.pNext = &feats,
                                             .queueCreateInfoCount = 1,
                                             .pQueueCreateInfos = &queue_info,
                                             .enabledExtensionCount = static_cast<uint32_t>(extensions.size()),
                                             .ppEnabledExtensionNames = extensions.data()};
    core->device = ::vk::raii::Device(core->physical, device_info);
    core->queue = ::vk::raii::Queue(core->device, core->probe.queue_family, 0);
    impl_->commands = ::vk::raii::CommandPool(
        core->device, ::vk::CommandPoolCreateInfo{.flags = ::vk::CommandPoolCreateFlagBits::eTransient,
                                                  .queueFamilyIndex = core->probe.queue_family});
    impl_->core = std::move(core);
  } catch (const ::vk::SystemError& e) {
    MOE_FAIL("vulkan: cannot open device " << chosen << " (" << devs[chosen].name << "): " << e.what());
  }
}

Context::~Context() {
  if (!impl_ || !impl_->abandoned) return;
  // The device may still run the abandoned sequence. Give it a minute (a real GPU's watchdog
  // resets a hung queue within seconds); if it is still running, leak the device and the
  // sequence's buffers on purpose: freeing memory a kernel still writes to corrupts the heap.
  const ::vk::Fence fence = *impl_->abandoned->fence;
  try {
    if (impl_->core->device.waitForFences(fence, VK_TRUE, 60'000'000'000ull) == ::vk::Result::eSuccess) return;
  } catch (const ::vk::SystemError&) {
    return;  // device lost: nothing runs any more
  }
  new std::shared_ptr<Core>(impl_->core);
  new std::unique_ptr<InFlight>(std::move(impl_->abandoned));
  new Impl(std::move(*impl_));  // pipelines and command pool too
}

const DeviceInfo& Context::info() const { return impl_->core->probe.info; }

namespace {

// The dispatch's entry point, checked against the device's limits before a pipeline is made:
// invalid usage (a workgroup too large, a subgroup size the device cannot pin) may crash a driver.
// Returns the entry point's workgroup invocations.
uint64_t check_dispatch(const Dispatch& d, const Probe& probe) {
  const DeviceInfo& info = probe.info;
  const std::string& label = d.label;
  const std::vector<EntryPoint> entries = compute_entry_points(d.spirv, label, d.spec_constants);
  const auto entry =
      std::find_if(entries.begin(), entries.end(), [&](const EntryPoint& e) { return e.name == d.entry; });
  if (entry == entries.end()) {
    std::string found;
    for (const EntryPoint& e : entries) found += (found.empty() ? "" : ", ") + e.name;
    MOE_FAIL("vulkan: " << label << ": the SPIR-V has no compute entry point '" << d.entry
                        << "' (found: " << (found.empty() ? "none" : found) << ")");
  }
  // Workgroup limits, where the size is a literal (invalid usage otherwise: drivers may crash).
  const uint64_t invocations = uint64_t(entry->local_size[0]) * entry->local_size[1] * entry->local_size[2];
  for (int k = 0; k < 3 && invocations > 0; ++k)
    MOE_CHECK(entry->local_size[k] <= probe.max_workgroup_size[k],
              "vulkan: " << label << ": local_size[" << k << "] = " << entry->local_size[k]
                         << " exceeds maxComputeWorkGroupSize " << probe.max_workgroup_size[k] << " of "
                         << info.name);
  MOE_CHECK(invocations <= info.max_workgroup_invocations,
            "vulkan: " << label << ": workgroup of " << invocations
                       << " invocations exceeds maxComputeWorkGroupInvocations " << info.max_workgroup_invocations
                       << " of " << info.name);
  if (d.required_subgroup_size != 0) {
    const uint32_t s = d.required_subgroup_size;
    MOE_CHECK(info.subgroup_size_control,
              "vulkan: " << label << ": required subgroup size " << s << " but " << info.name
                         << " has no subgroup size control for compute (its subgroup size is " << info.subgroup_size
                         << ")");
    MOE_CHECK(std::has_single_bit(s) && s >= info.min_subgroup_size && s <= info.max_subgroup_size,
              "vulkan: " << label << ": required subgroup size " << s << " is not a power of two in ["
                         << info.min_subgroup_size << ", " << info.max_subgroup_size << "] (" << info.name << ")");
    const uint64_t most = uint64_t(probe.max_compute_workgroup_subgroups) * s;
    MOE_CHECK(invocations <= most,
              "vulkan: " << label << ": workgroup of " << invocations << " invocations at subgroup size " << s
                         << " exceeds maxComputeWorkgroupSubgroups x size = " << most << " of " << info.name);
  }
  for (size_t i = 0; i < d.spec_constants.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      MOE_CHECK(d.spec_constants[i].id != d.spec_constants[j].id,
                "vulkan: " << label << ": specialization constant " << d.spec_constants[i].id << " is given twice");
  MOE_CHECK(d.push_constants.size() % 4 == 0 && d.push_constants.size() <= probe.max_push_constants,
            "vulkan: " << label << ": " << d.push_constants.size()
                       << " bytes of push constants; expected a multiple of 4, at most "
                       << probe.max_push_constants);

  return invocations;
}

// The pipeline cache's key: everything the pipeline and its layout depend on. `slots`: the
// bindings' (binding, uniform) pairs, sorted.
std::string pipeline_key(const Dispatch& d, std::vector<std::pair<uint32_t, bool>>& slots) {
  std::string key;
  const auto put = [&key](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); };
  const auto put32 = [&put](uint32_t v) { put(&v, 4); };
  put32(static_cast<uint32_t>(d.spirv.size()));
  put(d.spirv.data(), d.spirv.size_bytes());
  put32(static_cast<uint32_t>(d.entry.size()));
  key += d.entry;
  put32(static_cast<uint32_t>(d.spec_constants.size()));
  for (const SpecConstant& c : d.spec_constants) put32(c.id), put32(c.value);
  put32(d.required_subgroup_size);
  put32(d.check_access ? 1u : 0u);
  put32(d.poison_locals ? 1u : 0u);
  put32(static_cast<uint32_t>(d.push_constants.size()));
  for (const Binding& b : d.bindings) slots.emplace_back(b.binding, b.uniform);
  std::sort(slots.begin(), slots.end());
  for (auto [s, uniform] : slots) put32(s), put32(uniform ? 1u : 0u);
  return key;
}

}  // namespace

void throw_pipeline_build_error(int result, const std::string& what, const std::string& label, bool access_checked) {
  if (result == VK_ERROR_DEVICE_LOST) MOE_FAIL("vulkan: building " << label << ": " << what);
  throw PlanError("vulkan: the driver could not build the pipeline of " + label +
                  (access_checked ? " with moeoracle's access checks instrumented in" : "") + ": " + what +
                  (access_checked ? " (the kernel as written may build: the checks add code to every access)" : ""));
}

Pipeline& Context::Impl::pipeline_for(const Dispatch& d) {
  const DeviceInfo& info = core->probe.info;
  const std::string& label = d.label;
  uint64_t invocations = 0;
  try {
    invocations = check_dispatch(d, core->probe);
  } catch (const Error& e) {
    throw PlanError(e.what());
  }
  std::vector<std::pair<uint32_t, bool>> slots;  // (binding, uniform)
  std::string key = pipeline_key(d, slots);
  if (auto it = pipelines.find(key); it != pipelines.end()) return *it->second;

  auto p = std::make_unique<Pipeline>();
  std::vector<uint32_t> words = d.poison_locals ? detail::poison_locals(d.spirv, label, d.spec_constants)
                                               : std::vector<uint32_t>(d.spirv.begin(), d.spirv.end());
  if (d.check_access && d.bindings.size() < core->probe.max_storage_buffers_per_stage) {
    uint32_t next = 0;
    for (const Binding& b : d.bindings) next = std::max(next, b.binding + 1);
    const detail::AccessLimits lim{.min_binding = next,
                                   .spec = d.spec_constants,
                                   .invocations = uint32_t(invocations),
                                   .max_shared_bytes = info.max_shared_memory,
                                   .subgroup_size = d.required_subgroup_size ? d.required_subgroup_size
                                                    : info.min_subgroup_size == info.max_subgroup_size ? info.subgroup_size
                                                                                                        : 0u,
                                   .bare_vars = detail::bare_variables(d.spirv)};
    detail::AccessCheck ac = detail::check_access(words, label, d.entry, lim);
    if (!ac.words.empty()) {
      words = std::move(ac.words);
      p->check_binding = ac.binding, p->check_sites = std::move(ac.sites), p->check_lengths = std::move(ac.lengths);
      slots.emplace_back(ac.binding, false);
    }
  }
  try {
    build_pipeline(*p, d, words, slots);
  } catch (const ::vk::SystemError& e) {
    throw_pipeline_build_error(e.code().value(), e.what(), label, p->checked());
  }
  return *pipelines.emplace(std::move(key), std::move(p)).first->second;
}

// The module, layouts and pipeline of `p` for dispatch `d` from the (instrumented) SPIR-V `words`.
void Context::Impl::build_pipeline(Pipeline& p, const Dispatch& d, const std::vector<uint32_t>& words,
                                   const std::vector<std::pair<uint32_t, bool>>& slots) {
  const ::vk::raii::Device& dev = core->device;
  p.module = ::vk::raii::ShaderModule(
      dev, ::vk::ShaderModuleCreateInfo{.codeSize = words.size() * 4, .pCode = words.data()});
  std::vector<::vk::DescriptorSetLayoutBinding> lb;
  for (auto [s, uniform] : slots)
    lb.push_back({.binding = s,
                  .descriptorType = uniform ? ::vk::DescriptorType::eUniformBuffer : ::vk::DescriptorType::eStorageBuffer,
                  .descriptorCount = 1,
                  .stageFlags = ::vk::ShaderStageFlagBits::eCompute});
  p.set_layout = ::vk::raii::DescriptorSetLayout(
      dev,
      ::vk::DescriptorSetLayoutCreateInfo{.bindingCount = static_cast<uint32_t>(lb.size()), .pBindings = lb.data()});
  const ::vk::PushConstantRange pcr{.stageFlags = ::vk::ShaderStageFlagBits::eCompute,
                                    .offset = 0,
                                    .size = static_cast<uint32_t>(d.push_constants.size())};
  const ::vk::DescriptorSetLayout set_layout = *p.set_layout;
  p.layout = ::vk::raii::PipelineLayout(
      dev, ::vk::PipelineLayoutCreateInfo{.setLayoutCount = 1,
                                          .pSetLayouts = &set_layout,
                                          .pushConstantRangeCount = d.push_constants.empty() ? 0u : 1u,
                                          .pPushConstantRanges = &pcr});
  std::vector<::vk::SpecializationMapEntry> map;
  std::vector<uint32_t> values;
  for (const SpecConstant& c : d.spec_constants) {
    map.push_back({.constantID = c.id, .offset = static_cast<uint32_t>(4 * values.size()), .size = 4});
    values.push_back(c.value);
  }
  const ::vk::SpecializationInfo spec{.mapEntryCount = static_cast<uint32_t>(map.size()),
                                      .pMapEntries = map.data(),
                                      .dataSize = 4 * values.size(),
                                      .pData = values.data()};
  ::vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo required{.requiredSubgroupSize = d.required_subgroup_size};
  const ::vk::PipelineShaderStageCreateInfo stage{.pNext = d.required_subgroup_size ? &required : nullptr,
                                                  .stage = ::vk::ShaderStageFlagBits::eCompute,
                                                  .module = *p.module,
                                                  .pName = d.entry.c_str(),
                                                  .pSpecializationInfo = map.empty() ? nullptr : &spec};
  p.pipeline =
      ::vk::raii::Pipeline(dev, nullptr, ::vk::ComputePipelineCreateInfo{.stage = stage, .layout = *p.layout});
}

void Context::Impl::retire_abandoned(uint64_t timeout_ms) {
  if (!abandoned) return;
  const ::vk::Result r = core->device.waitForFences(*abandoned->fence, VK_TRUE, timeout_ms * 1'000'000ull);
  MOE_CHECK(r == ::vk::Result::eSuccess, "vulkan: an earlier sequence that timed out ("
                                             << abandoned->labels << ") is still running after " << timeout_ms
                                             << " more ms; nothing new can run");
  abandoned.reset();
}

// Checks every argument before anything is recorded: a bad binding is the caller's error, and
// Vulkan would only answer it with undefined behaviour. Counts the descriptors the sets need.
void Context::Impl::validate(const std::vector<Dispatch>& sequence, uint32_t* descriptors, uint32_t* uniforms) const {
  const DeviceInfo& info = core->probe.info;
  for (const Dispatch& d : sequence) {
    const std::string& label = d.label;
    for (int k = 0; k < 3; ++k)
      MOE_CHECK(d.groups[k] >= 1 && d.groups[k] <= info.max_workgroup_count[k],
                "vulkan: " << label << ": groups[" << k << "] = " << d.groups[k] << ", expected 1.."
                           << info.max_workgroup_count[k]);
    MOE_CHECK(d.bindings.size() <= core->probe.max_storage_buffers_per_stage,
              "vulkan: " << label << ": " << d.bindings.size() << " storage buffers, the device allows "
                         << core->probe.max_storage_buffers_per_stage);
    for (size_t i = 0; i < d.bindings.size(); ++i) {
      const Binding& b = d.bindings[i];
      MOE_CHECK(b.buffer && b.buffer->impl_, "vulkan: " << label << ": binding " << b.binding << " has no buffer");
      MOE_CHECK(b.buffer->impl_->alloc->core == core,
                "vulkan: " << label << ": binding " << b.binding << " is a buffer of another Context");
      for (size_t j = 0; j < i; ++j)
        MOE_CHECK(d.bindings[j].binding != b.binding,
                  "vulkan: " << label << ": binding " << b.binding << " is given twice");
      const uint64_t size = b.buffer->size();
      MOE_CHECK(b.offset < size, "vulkan: " << label << ": binding " << b.binding << " offset " << b.offset
                                            << " is not inside its " << size << "-byte buffer");
      MOE_CHECK(b.offset % info.min_storage_buffer_offset_alignment == 0,
                "vulkan: " << label << ": binding " << b.binding << " offset " << b.offset << " is not a multiple of "
                           << info.min_storage_buffer_offset_alignment << " (minStorageBufferOffsetAlignment)");
      const uint64_t range = usable_range(b);
      MOE_CHECK(range <= size - b.offset, "vulkan: " << label << ": binding " << b.binding << " range " << range
                                                     << " at offset " << b.offset << " overruns its " << size
                                                     << "-byte buffer");
      const uint64_t max_range = b.uniform ? info.max_uniform_buffer_range : info.max_storage_buffer_range;
      MOE_CHECK(range <= max_range, "vulkan: " << label << ": binding " << b.binding << " range " << range << " exceeds "
                                               << (b.uniform ? "maxUniformBufferRange " : "maxStorageBufferRange ")
                                               << max_range << " of " << info.name);
      *uniforms += b.uniform ? 1u : 0u;
    }
    *descriptors += static_cast<uint32_t>(d.bindings.size());
  }
}

namespace detail {

// The shadows of the races between workgroups (spirv_access_global.cpp), after the slots of
// `init` (word 0, then a slot per entry of `lens`, each an element count so far): a scratch pair
// first, which every shadow slot the budget of `max_words` leaves out points at (its flag clear:
// the kernel records nothing there), then two zeroed words per element of each buffer.
void place_global_shadows(const std::vector<RuntimeLength>& lens, std::vector<uint32_t>& init, uint64_t max_words) {
  if (std::none_of(lens.begin(), lens.end(), [](const RuntimeLength& l) { return l.shadow; })) return;
  const uint32_t scratch = static_cast<uint32_t>(init.size() - 1);  // an index after word 0
  uint64_t end = uint64_t(scratch) + 2;
  for (size_t j = 0; j < lens.size(); ++j) {
    if (!lens[j].shadow) continue;
    const uint64_t n = init[1 + j];
    if (n == 0 || 1 + end + 2 * n > max_words) {
      init[1 + j] = scratch;
      continue;
    }
    init[1 + j] = static_cast<uint32_t>(end) | 0x80000000u;
    end += 2 * n;
  }
  init.resize(1 + end, 0u);
}

}  // namespace detail

// The access-check buffer of each checked pipeline (word 0 the violated site, word 1 + j the
// element count of the kernel's runtime-array access j over its binding's usable bytes, not the
// guard, or where its workgroup shadow starts; the shadows after), and one descriptor set per
// dispatch in the job's pool.
Context::Impl::Bound Context::Impl::bind(Context& ctx, InFlight& job, const std::vector<Dispatch>& sequence,
                                         uint32_t descriptors, uint32_t uniforms) {
  Bound bd;
  const ::vk::raii::Device& dev = core->device;
  const DeviceInfo& info = core->probe.info;
  const uint32_t n = static_cast<uint32_t>(sequence.size());
  for (const Dispatch& d : sequence) bd.pipes.push_back(&pipeline_for(d));
  bd.checks.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!bd.pipes[i]->checked()) continue;
    const std::vector<detail::RuntimeLength>& lens = bd.pipes[i]->check_lengths;
    std::vector<uint32_t> init(1 + std::max<size_t>(lens.size(), 1), 0u);
    for (size_t j = 0; j < lens.size(); ++j)
      for (const Binding& b : sequence[i].bindings) {
        if (b.binding != lens[j].binding) continue;
        const uint64_t range = usable_range(b);
        init[1 + j] = range < lens[j].offset ? 0u : static_cast<uint32_t>(std::min<uint64_t>(
                                                        (range - lens[j].offset) / lens[j].stride, UINT32_MAX));
      }
    detail::place_global_shadows(lens, init, std::min<uint64_t>(detail::kMaxGlobalShadowWords, info.max_storage_buffer_range / 4));
    bd.checks[i] = ctx.make_buffer(init.size() * 4, 0);
    bd.checks[i]->upload(init.data(), init.size() * 4);
    ++descriptors;
  }
  const ::vk::DescriptorPoolSize pool_sizes[2] = {
      {.type = ::vk::DescriptorType::eStorageBuffer, .descriptorCount = std::max(descriptors - uniforms, 1u)},
      {.type = ::vk::DescriptorType::eUniformBuffer, .descriptorCount = std::max(uniforms, 1u)}};
  job.pool = ::vk::raii::DescriptorPool(
      dev, ::vk::DescriptorPoolCreateInfo{.maxSets = n, .poolSizeCount = 2, .pPoolSizes = pool_sizes});
  std::vector<::vk::DescriptorSetLayout> layouts;
  for (Pipeline* p : bd.pipes) layouts.push_back(*p->set_layout);
  // Plain handles: the sets go with their pool when the sequence is done.
  bd.sets = (*dev).allocateDescriptorSets(::vk::DescriptorSetAllocateInfo{
      .descriptorPool = *job.pool, .descriptorSetCount = n, .pSetLayouts = layouts.data()});
  std::vector<::vk::DescriptorBufferInfo> buffer_infos;
  buffer_infos.reserve(descriptors);
  std::vector<::vk::WriteDescriptorSet> writes;
  const auto write = [&](uint32_t i, uint32_t binding, const Buffer& buf, uint64_t offset, uint64_t range,
                         bool uniform) {
    job.buffers.push_back(buf.impl_->alloc);
    buffer_infos.push_back({.buffer = *buf.impl_->alloc->buffer, .offset = offset, .range = range});
    writes.push_back({.dstSet = bd.sets[i],
                      .dstBinding = binding,
                      .dstArrayElement = 0,
                      .descriptorCount = 1,
                      .descriptorType = uniform ? ::vk::DescriptorType::eUniformBuffer : ::vk::DescriptorType::eStorageBuffer,
                      .pBufferInfo = &buffer_infos.back()});
  };
  for (uint32_t i = 0; i < n; ++i)
    for (const Binding& b : sequence[i].bindings) {
      const uint64_t size = b.buffer->size(), range = usable_range(b);
      // Reaching the usable end: expose the guard too (see Binding), within the device's limit;
      // a uniform buffer is read-only, so its guard has nothing to catch.
      const uint64_t bound = b.offset + range == size && !b.uniform
                                 ? std::min<uint64_t>(range + b.buffer->impl_->guard, info.max_storage_buffer_range)
                                 : range;
      write(i, b.binding, *b.buffer, b.offset, bound, b.uniform);
    }
  for (uint32_t i = 0; i < n; ++i)
    if (bd.checks[i]) write(i, bd.pipes[i]->check_binding, *bd.checks[i], 0, bd.checks[i]->size(), false);
  if (!writes.empty()) dev.updateDescriptorSets(writes, nullptr);
  return bd;
}

// One copy of the sequence: a compute->compute memory barrier (shader write -> shader
// read|write) between consecutive dispatches. Timestamps, at the bottom of the pipe on both sides
// (the first latches once everything before it has finished, the second once this has): around
// each dispatch (per_dispatch) or around the whole copy, from query `first` on.
void Context::Impl::record_copy(::vk::raii::CommandBuffer& cmd, const std::vector<Dispatch>& sequence,
                                const Bound& bd, const ::vk::raii::QueryPool* queries, uint32_t first,
                                bool per_dispatch) {
  const uint32_t n = static_cast<uint32_t>(sequence.size());
  const auto stamp = [&](uint32_t q) {
    if (queries) cmd.writeTimestamp(::vk::PipelineStageFlagBits::eBottomOfPipe, **queries, q);
  };
  if (!per_dispatch) stamp(first);
  for (uint32_t i = 0; i < n; ++i) {
    const Dispatch& d = sequence[i];
    if (i > 0) {
      const ::vk::MemoryBarrier barrier{
          .srcAccessMask = ::vk::AccessFlagBits::eShaderWrite,
          .dstAccessMask = ::vk::AccessFlagBits::eShaderRead | ::vk::AccessFlagBits::eShaderWrite};
      cmd.pipelineBarrier(::vk::PipelineStageFlagBits::eComputeShader, ::vk::PipelineStageFlagBits::eComputeShader,
                          {}, barrier, nullptr, nullptr);
    }
    cmd.bindPipeline(::vk::PipelineBindPoint::eCompute, *bd.pipes[i]->pipeline);
    cmd.bindDescriptorSets(::vk::PipelineBindPoint::eCompute, *bd.pipes[i]->layout, 0, bd.sets[i], nullptr);
    if (!d.push_constants.empty())
      cmd.pushConstants<uint8_t>(*bd.pipes[i]->layout, ::vk::ShaderStageFlagBits::eCompute, 0, d.push_constants);
    if (per_dispatch) stamp(first + 2 * i);
    cmd.dispatch(d.groups[0], d.groups[1], d.groups[2]);
    if (per_dispatch) stamp(first + 2 * i + 1);
  }
  if (!per_dispatch) stamp(first + 1);
}

// The repeat's copies: each cold one after a fill of the flush buffer (transfer write, then a
// barrier to the compute stage), each copy after a barrier that orders it behind the previous
// one (its writes, and the next fill behind its reads).
void Context::Impl::record_repeat(Context& ctx, InFlight& job, const std::vector<Dispatch>& sequence,
                                  const Bound& bd, const Repeat& repeat) {
  ::vk::raii::CommandBuffer& cmd = job.cmd;
  const ::vk::raii::QueryPool* queries = *job.queries ? &job.queries : nullptr;
  if (flush) job.buffers.push_back(flush->impl_->alloc);
  const uint32_t n = static_cast<uint32_t>(sequence.size());  // the reader, if any, is bound as n
  const ::vk::MemoryBarrier between{
      .srcAccessMask = ::vk::AccessFlagBits::eShaderWrite | ::vk::AccessFlagBits::eTransferWrite,
      .dstAccessMask = ::vk::AccessFlagBits::eShaderRead | ::vk::AccessFlagBits::eShaderWrite |
                       ::vk::AccessFlagBits::eTransferWrite};
  const auto stages = ::vk::PipelineStageFlagBits::eComputeShader | ::vk::PipelineStageFlagBits::eTransfer;
  // The warm-up, timed by the last two queries.
  const uint32_t wq = 2 * (repeat.cold + repeat.warm);
  if (queries && repeat.warmup > 0) cmd.writeTimestamp(::vk::PipelineStageFlagBits::eBottomOfPipe, **queries, wq);
  for (uint32_t w = 0; w < repeat.warmup; ++w) {
    cmd.fillBuffer(*flush->impl_->alloc->buffer, 0, repeat.flush_bytes & ~uint64_t(3), w);
    cmd.pipelineBarrier(stages, stages, {}, between, nullptr, nullptr);
  }
  if (queries && repeat.warmup > 0) cmd.writeTimestamp(::vk::PipelineStageFlagBits::eBottomOfPipe, **queries, wq + 1);
  for (uint32_t r = 0; r < repeat.cold + repeat.warm; ++r) {
    if (r < repeat.cold && bd.pipes.size() > n) {
      cmd.bindPipeline(::vk::PipelineBindPoint::eCompute, *bd.pipes[n]->pipeline);
      cmd.bindDescriptorSets(::vk::PipelineBindPoint::eCompute, *bd.pipes[n]->layout, 0, bd.sets[n], nullptr);
      const uint32_t words = uint32_t(std::min<uint64_t>(flush_read_bytes(ctx, repeat) / 16, UINT32_MAX));
      cmd.pushConstants<uint32_t>(*bd.pipes[n]->layout, ::vk::ShaderStageFlagBits::eCompute, 0, words);
      cmd.dispatch(1024, 1, 1);
      cmd.pipelineBarrier(stages, stages, {}, between, nullptr, nullptr);
    } else if (r < repeat.cold) {
      cmd.fillBuffer(*flush->impl_->alloc->buffer, 0, repeat.flush_bytes & ~uint64_t(3), r + 1);
      cmd.pipelineBarrier(stages, stages, {}, between, nullptr, nullptr);
    }
    record_copy(cmd, sequence, bd, queries, 2 * r, false);
    cmd.pipelineBarrier(stages, stages, {}, between, nullptr, nullptr);
  }
}

// The flush reader's dispatch when the repeat's cold copies are flushed by one (bound after the
// sequence, index n, from the same descriptor pool). Makes (or grows) the flush buffer first.
std::optional<Dispatch> Context::Impl::flush_reader(Context& ctx, const Repeat& repeat) {
  const bool repeated = repeat.cold + repeat.warm > 0;
  if (repeated && repeat.cold + repeat.warmup > 0 && (!flush || flush->size() < repeat.flush_bytes))
    flush.emplace(ctx.make_buffer(std::max<uint64_t>(repeat.flush_bytes, 16), 0));
  if (!repeated || repeat.cold == 0 || repeat.flush_reader.empty() || repeat.flush_bytes < 16) return std::nullopt;
  Dispatch reader;
  reader.label = "flush_reader", reader.spirv = repeat.flush_reader, reader.poison_locals = false;
  // The reader's range, at most a storage buffer's limit (lavapipe: 128 MiB); the dispatch reads
  // that much. A host whose cache is larger (a 480 MiB L3 seen, whose flush is 960 MiB) is then
  // flushed only partly: lavapipe's figures are not performance figures.
  reader.bindings = {{0, &*flush, 0, flush_read_bytes(ctx, repeat)}};
  reader.push_constants.resize(4);
  return reader;
}

// Submits the job's command buffer and waits for its fence: the limit of wall time, then on a CPU
// driver, which runs it on this process's threads, a grace of as much CPU time on the busiest one
// (JobWatch; read only past the limit, never for a submission that ends in time).
::vk::Result Context::Impl::submit_and_wait(InFlight& job, uint64_t timeout_ms) const {
  const ::vk::raii::Device& dev = core->device;
  const ::vk::CommandBuffer cb = *job.cmd;
  JobWatch watch;
  watch.start();
  core->queue.submit(::vk::SubmitInfo{.commandBufferCount = 1, .pCommandBuffers = &cb}, *job.fence);
  ::vk::Result r = dev.waitForFences(*job.fence, VK_TRUE, timeout_ms * 1'000'000ull);
  const uint64_t slice_ns = std::clamp<uint64_t>(timeout_ms / 4, 1, 100) * 1'000'000ull;
  const bool cpu_driver = core->probe.info.type == "cpu";
  while (r == ::vk::Result::eTimeout && !watch.hangs(0, std::chrono::milliseconds(timeout_ms), cpu_driver))
    r = dev.waitForFences(*job.fence, VK_TRUE, slice_ns);
  return r;
}

uint64_t compile_limit_ms(uint64_t timeout_ms) { return std::max<uint64_t>(timeout_ms, 300'000); }

// Submits the job (a compile: empty dispatches) and waits while the driver's busiest thread has
// spent at most `limit_ms` of CPU time since the submit (measured from the start, once per new
// pipeline: the verdict is the compile's CPU time alone), 10x that in wall-clock time at most; on a
// GPU, `limit_ms` of wall-clock time.
bool Context::Impl::compiled_in_time(InFlight& job, uint64_t limit_ms) const {
  const ::vk::raii::Device& dev = core->device;
  const ::vk::CommandBuffer cb = *job.cmd;
  const bool cpu_driver = core->probe.info.type == "cpu";
  const ThreadCpuClock clock;
  const auto t0 = std::chrono::steady_clock::now();
  const double wall_cap_ms = double(limit_ms) * (cpu_driver ? 10 : 1);
  core->queue.submit(::vk::SubmitInfo{.commandBufferCount = 1, .pCommandBuffers = &cb}, *job.fence);
  const uint64_t slice_ns = std::clamp<uint64_t>(limit_ms / 4, 1, 100) * 1'000'000ull;
  while (dev.waitForFences(*job.fence, VK_TRUE, slice_ns) == ::vk::Result::eTimeout) {
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (wall_ms > wall_cap_ms || (cpu_driver && clock.busiest_ms() > double(limit_ms))) return false;
  }
  return true;
}

// lavapipe compiles a pipeline's machine code at its first dispatch, not at its creation (llvmpipe
// builds the shader variant in launch_grid, before it looks at the grid), and a checked kernel
// can take minutes to compile there. So every pipeline of the sequence new to this Context is
// first dispatched with no workgroups (valid Vulkan: nothing runs), with its own descriptor set
// and push constants, in a submission of its own under the compile's limit (compile_limit_ms): the
// kernel's time limit and timestamps never include the compile, and a compile that outlasts its
// limit is reported as one. A driver that compiles at creation (a GPU's) pays one empty
// submission per pipeline.
void Context::Impl::compile_first(std::unique_ptr<InFlight>& job, const std::vector<Dispatch>& sequence,
                                  const Bound& bd, uint64_t timeout_ms) {
  std::vector<uint32_t> fresh;
  for (uint32_t i = 0; i < sequence.size(); ++i)
    if (!bd.pipes[i]->compiled &&
        std::none_of(fresh.begin(), fresh.end(), [&](uint32_t j) { return bd.pipes[j] == bd.pipes[i]; }))
      fresh.push_back(i);
  if (fresh.empty()) return;
  const ::vk::raii::Device& dev = core->device;
  job->cmd = std::move(dev.allocateCommandBuffers(::vk::CommandBufferAllocateInfo{
      .commandPool = *commands, .level = ::vk::CommandBufferLevel::ePrimary, .commandBufferCount = 1})[0]);
  job->cmd.begin(::vk::CommandBufferBeginInfo{.flags = ::vk::CommandBufferUsageFlagBits::eOneTimeSubmit});
  std::string labels;
  for (uint32_t i : fresh) {
    const Dispatch& d = sequence[i];
    labels += (labels.empty() ? "" : ", ") + (d.label.empty() ? std::string("(unlabelled)") : d.label);
    job->cmd.bindPipeline(::vk::PipelineBindPoint::eCompute, *bd.pipes[i]->pipeline);
    job->cmd.bindDescriptorSets(::vk::PipelineBindPoint::eCompute, *bd.pipes[i]->layout, 0, bd.sets[i], nullptr);
    if (!d.push_constants.empty())
      job->cmd.pushConstants<uint8_t>(*bd.pipes[i]->layout, ::vk::ShaderStageFlagBits::eCompute, 0, d.push_constants);
    job->cmd.dispatch(0, 0, 0);
  }
  job->cmd.end();
  job->fence = ::vk::raii::Fence(dev, ::vk::FenceCreateInfo{});
  const uint64_t limit = compile_limit ? compile_limit : compile_limit_ms(timeout_ms);
  if (!compiled_in_time(*job, limit)) {
    const DeviceInfo& info = core->probe.info;
    abandoned = std::move(job);  // the driver may still be compiling with the sets bound
    MOE_FAIL("vulkan: the driver did not finish compiling " << labels << " within " << limit << " ms"
             << (info.type == "cpu" ? " of CPU time on its busiest thread" : "") << " on " << info.name
             << "; the kernel never ran (a CPU driver compiles a pipeline at its first dispatch;"
             << " moeoracle's access checks, where on, add code to every access)");
  }
  for (uint32_t i : fresh) bd.pipes[i]->compiled = true;
}

void Context::Impl::read_access_checks(const std::vector<Dispatch>& sequence, const Bound& bd,
                                       RunResult& result) const {
  for (size_t i = 0; i < sequence.size(); ++i) {
    if (!bd.checks[i]) continue;
    uint32_t site = 0;
    bd.checks[i]->download(&site, 4);
    const uint32_t rank = site / detail::kAccessSiteRank;
    site %= detail::kAccessSiteRank;
    const std::vector<std::string>& sites = bd.pipes[i]->check_sites;
    if (site == 0) continue;
    result.access_violations.push_back(sequence[i].label + ": " +
                                       (site <= sites.size() ? sites[site - 1] : "site " + std::to_string(site)));
    result.nan_operand.push_back(rank == 0);
  }
}

void Context::Impl::read_timestamps(InFlight& job, uint32_t stamps_wanted, const Repeat& repeat,
                                    const std::string& labels, RunResult& result) const {
  const bool repeated = repeat.cold + repeat.warm > 0;
  const auto [qr, stamps] =
      job.queries.getResults<uint64_t>(0, stamps_wanted, stamps_wanted * sizeof(uint64_t), sizeof(uint64_t),
                                       ::vk::QueryResultFlagBits::e64 | ::vk::QueryResultFlagBits::eWait);
  MOE_CHECK(qr == ::vk::Result::eSuccess, "vulkan: timestamps of " << labels << " not available: " << ::vk::to_string(qr));
  const uint32_t bits = core->probe.timestamp_bits;
  const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  for (uint32_t i = 0; i < stamps_wanted / 2; ++i) {
    const uint64_t ticks = (stamps[2 * i + 1] - stamps[2 * i]) & mask;  // modular: survives a wrap
    const double ms = static_cast<double>(ticks) * core->probe.info.timestamp_period_ns * 1e-6;
    if (repeated && i == repeat.cold + repeat.warm)
      result.warmup_ms = ms;
    else
      (!repeated ? result.gpu_ms : i < repeat.cold ? result.cold_ms : result.warm_ms).push_back(ms);
  }
}

RunResult Context::run(const std::vector<Dispatch>& sequence, uint64_t timeout_ms, const Repeat& repeat) {
  MOE_CHECK(!sequence.empty(), "vulkan: run() of an empty sequence");
  MOE_CHECK(timeout_ms <= UINT64_MAX / 1'000'000ull, "vulkan: timeout of " << timeout_ms << " ms is too long");
  MOE_CHECK(repeat.cold + uint64_t(repeat.warm) <= 4096 && repeat.warmup <= 100000,
            "vulkan: a repeat of " << repeat.cold << " + " << repeat.warm << " copies after " << repeat.warmup
                                   << " warm-up fills; at most 4096 copies and 100000 fills");
  Impl& m = *impl_;
  const DeviceInfo& info = m.core->probe.info;
  const std::string labels = labels_of(sequence);
  uint32_t descriptors = 0, uniforms = 0;
  try {
    m.validate(sequence, &descriptors, &uniforms);
  } catch (const Error& e) {
    throw PlanError(e.what());
  }
  m.retire_abandoned(timeout_ms);

  RunResult result;
  auto job = std::make_unique<InFlight>();
  job->labels = labels;
  try {
    const bool repeated = repeat.cold + repeat.warm > 0;
    std::vector<Dispatch> with_reader;  // the sequence and the flush reader, only when there is one
    if (std::optional<Dispatch> reader = m.flush_reader(*this, repeat)) {
      with_reader = sequence;
      with_reader.push_back(std::move(*reader));
      descriptors = uniforms = 0;  // validate() counts up
      m.validate(with_reader, &descriptors, &uniforms);
    }
    const std::vector<Dispatch>& bound = with_reader.empty() ? sequence : with_reader;
    const Impl::Bound bd = m.bind(*this, *job, bound, descriptors, uniforms);
    m.compile_first(job, bound, bd, timeout_ms);
    for (const Pipeline* p : bd.pipes)  // the shadows hold one copy's accesses
      MOE_CHECK(!repeated || std::none_of(p->check_lengths.begin(), p->check_lengths.end(),
                                          [](const detail::RuntimeLength& l) { return l.shadow; }),
                "vulkan: " << labels << ": a repeated run with the access checks on (run repeats without them)");
    const ::vk::raii::Device& dev = m.core->device;
    const uint32_t n = static_cast<uint32_t>(sequence.size());
    MOE_CHECK(repeated || repeat.warmup == 0, "vulkan: a repeat with warm-up fills but no copies");
    const uint32_t stamps_wanted = 2 * (repeated ? repeat.cold + repeat.warm + (repeat.warmup > 0) : n);
    const bool timed = info.timestamp_period_ns > 0;
    if (timed)
      job->queries = ::vk::raii::QueryPool(
          dev, ::vk::QueryPoolCreateInfo{.queryType = ::vk::QueryType::eTimestamp, .queryCount = stamps_wanted});
    job->cmd = std::move(dev.allocateCommandBuffers(::vk::CommandBufferAllocateInfo{
        .commandPool = *m.commands, .level = ::vk::CommandBufferLevel::ePrimary, .commandBufferCount = 1})[0]);
    ::vk::raii::CommandBuffer& cmd = job->cmd;
    cmd.begin(::vk::CommandBufferBeginInfo{.flags = ::vk::CommandBufferUsageFlagBits::eOneTimeSubmit});
    if (timed) cmd.resetQueryPool(*job->queries, 0, stamps_wanted);
    // Uploads through staging copies (earlier submissions) become visible to the shaders.
    const ::vk::MemoryBarrier from_copies{.srcAccessMask = ::vk::AccessFlagBits::eTransferWrite,
                                          .dstAccessMask = ::vk::AccessFlagBits::eShaderRead |
                                                           ::vk::AccessFlagBits::eShaderWrite};
    cmd.pipelineBarrier(::vk::PipelineStageFlagBits::eTransfer, ::vk::PipelineStageFlagBits::eComputeShader, {},
                        from_copies, nullptr, nullptr);
    if (repeated)
      m.record_repeat(*this, *job, sequence, bd, repeat);
    else
      m.record_copy(cmd, sequence, bd, timed ? &job->queries : nullptr, 0, true);
    // Shader writes become visible to the host's reads of the mapped memory after the fence.
    const ::vk::MemoryBarrier to_host{.srcAccessMask = ::vk::AccessFlagBits::eShaderWrite,
                                      .dstAccessMask = ::vk::AccessFlagBits::eHostRead};
    cmd.pipelineBarrier(::vk::PipelineStageFlagBits::eComputeShader, ::vk::PipelineStageFlagBits::eHost, {}, to_host,
                        nullptr, nullptr);
    cmd.end();

    job->fence = ::vk::raii::Fence(dev, ::vk::FenceCreateInfo{});
    const auto t0 = std::chrono::steady_clock::now();
    // Host writes to coherent memory before the submit are visible to it (queue submission
    // is a host-write -> device-access dependency).
    ::vk::Result r;
    {
      const DispatchMallocPoison poison;
      r = m.submit_and_wait(*job, timeout_ms);
    }
    result.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r != ::vk::Result::eSuccess) {
      m.abandoned = std::move(job);  // the device may still use all of it
      MOE_FAIL("vulkan: kernel hung or too slow: " << labels << " did not finish within " << timeout_ms << " ms"
                                                   << (info.type == "cpu" ? " and a grace of as much CPU time on any one thread" : "")
                                                   << " on " << info.name);
    }
    m.read_access_checks(sequence, bd, result);
    if (timed) m.read_timestamps(*job, stamps_wanted, repeat, labels, result);
  } catch (const ::vk::SystemError& e) {
    MOE_FAIL("vulkan: running " << labels << " on " << info.name << ": " << e.what());
  }
  return result;
}

void Context::set_compile_limit(uint64_t ms) { impl_->compile_limit = ms; }

void poison_dispatch_malloc(bool on) { g_poison_dispatch_malloc = on; }

}  // namespace moe::vk
