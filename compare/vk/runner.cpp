// The Vulkan runner on Vulkan-Hpp RAII. One Core (instance, device, queue) is shared by the
// Context and by every Buffer it made, so a Buffer that outlives its Context stays valid, and a
// sequence abandoned after a timeout keeps its buffers alive until the device is done with them
// (the GPU, or lavapipe's threads, may still be writing into them).
#include "compare/vk/runner.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <vulkan/vulkan_raii.hpp>

#include "core/check.h"

namespace moe::vk {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string version_string(uint32_t v) {
  std::ostringstream os;
  os << VK_API_VERSION_MAJOR(v) << '.' << VK_API_VERSION_MINOR(v) << '.' << VK_API_VERSION_PATCH(v);
  return os.str();
}

std::string type_name(::vk::PhysicalDeviceType t) {
  switch (t) {
    case ::vk::PhysicalDeviceType::eCpu:
      return "cpu";
    case ::vk::PhysicalDeviceType::eDiscreteGpu:
      return "discrete";
    case ::vk::PhysicalDeviceType::eIntegratedGpu:
      return "integrated";
    case ::vk::PhysicalDeviceType::eVirtualGpu:
      return "virtual";
    default:
      return "other";
  }
}

bool has_extension(const ::vk::raii::PhysicalDevice& pd, const char* name) {
  for (const ::vk::ExtensionProperties& e : pd.enumerateDeviceExtensionProperties())
    if (std::strcmp(e.extensionName.data(), name) == 0) return true;
  return false;
}

// The queue family the runner submits to: the first with compute and timestamps, else the
// first with compute (every Vulkan device has one; graphics queues support compute too).
std::optional<uint32_t> pick_queue_family(const ::vk::raii::PhysicalDevice& pd, uint32_t* timestamp_bits) {
  const auto families = pd.getQueueFamilyProperties();
  std::optional<uint32_t> any;
  for (uint32_t i = 0; i < families.size(); ++i) {
    if (!(families[i].queueFlags & ::vk::QueueFlagBits::eCompute)) continue;
    if (families[i].timestampValidBits > 0) {
      *timestamp_bits = families[i].timestampValidBits;
      return i;
    }
    if (!any) any = i;
  }
  *timestamp_bits = 0;
  return any;
}

// Everything list_devices() reports, plus what device creation needs.
struct Probe {
  DeviceInfo info;
  uint32_t queue_family = 0;
  uint32_t timestamp_bits = 0;
  bool size_control_ext = false;  // VK_EXT_subgroup_size_control must be enabled (device < 1.3)
  uint32_t max_push_constants = 0;
  uint32_t max_storage_buffers_per_stage = 0;
  uint32_t max_compute_workgroup_subgroups = 0;
  uint32_t max_workgroup_size[3] = {0, 0, 0};
  uint32_t api = 0;  // the version the runner uses: min(device, instance)
};

// The API version the instance asks for: the newest this code knows (1.3) that the loader offers.
uint32_t instance_api(const ::vk::raii::Context& ctx) {
  return std::min<uint32_t>(ctx.enumerateInstanceVersion(), VK_API_VERSION_1_3);
}

// `api`: the instance's version; a device is used at min(its version, the instance's).
Probe probe(const ::vk::raii::PhysicalDevice& pd, int index, uint32_t api) {
  Probe p;
  DeviceInfo& d = p.info;
  const ::vk::PhysicalDeviceProperties base = pd.getProperties();
  d.index = index;
  d.name = base.deviceName.data();
  d.type = type_name(base.deviceType);
  d.api_version = base.apiVersion;
  const ::vk::PhysicalDeviceLimits& lim = base.limits;
  d.max_storage_buffer_range = lim.maxStorageBufferRange;
  d.max_shared_memory = lim.maxComputeSharedMemorySize;
  d.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
  for (int k = 0; k < 3; ++k) d.max_workgroup_count[k] = lim.maxComputeWorkGroupCount[k];
  for (int k = 0; k < 3; ++k) p.max_workgroup_size[k] = lim.maxComputeWorkGroupSize[k];
  d.min_storage_buffer_offset_alignment = lim.minStorageBufferOffsetAlignment;
  p.max_push_constants = lim.maxPushConstantsSize;
  p.max_storage_buffers_per_stage = lim.maxPerStageDescriptorStorageBuffers;
  const std::optional<uint32_t> qf = pick_queue_family(pd, &p.timestamp_bits);
  p.queue_family = qf.value_or(0);
  // timestampComputeAndGraphics false means only some compute-capable families time; the
  // family's own timestampValidBits decides, as the spec says.
  d.timestamp_period_ns = (qf && p.timestamp_bits > 0) ? lim.timestampPeriod : 0.0f;
  d.driver = "unknown";
  p.api = std::min(d.api_version, api);
  if (p.api < VK_API_VERSION_1_1) return p;  // no properties2: the Context refuses it anyway

  // Chain only structures the device knows (an unknown sType in pNext is invalid usage).
  const bool v12 = p.api >= VK_API_VERSION_1_2, v13 = p.api >= VK_API_VERSION_1_3;
  const bool driver_ext = !v12 && has_extension(pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  p.size_control_ext = !v13 && has_extension(pd, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  ::vk::PhysicalDeviceSubgroupProperties sg{};
  ::vk::PhysicalDeviceDriverProperties drv{};
  ::vk::PhysicalDeviceSubgroupSizeControlProperties ssc{};
  ::vk::PhysicalDeviceProperties2 props{};
  props.pNext = &sg;
  void** tail = &sg.pNext;
  if (v12 || driver_ext) *tail = &drv, tail = &drv.pNext;
  if (v13 || p.size_control_ext) *tail = &ssc, tail = &ssc.pNext;
  vkGetPhysicalDeviceProperties2(static_cast<VkPhysicalDevice>(*pd),
                                 reinterpret_cast<VkPhysicalDeviceProperties2*>(&props));

  ::vk::PhysicalDeviceSubgroupSizeControlFeatures sscf{};
  ::vk::PhysicalDeviceFeatures2 feats{};
  if (v13 || p.size_control_ext) feats.pNext = &sscf;
  vkGetPhysicalDeviceFeatures2(static_cast<VkPhysicalDevice>(*pd),
                               reinterpret_cast<VkPhysicalDeviceFeatures2*>(&feats));

  if (v12 || driver_ext) {
    if (drv.driverID == ::vk::DriverId::eMesaLlvmpipe) d.loop_iteration_limit = 65535;
    d.driver = drv.driverName.data();
    const std::string info = drv.driverInfo.data();
    if (!info.empty()) d.driver += " " + info;
  }
  d.subgroup_size = sg.subgroupSize;
  d.min_subgroup_size = d.max_subgroup_size = sg.subgroupSize;
  const bool compute_sg = bool(sg.supportedStages & ::vk::ShaderStageFlagBits::eCompute);
  d.subgroup_arithmetic = compute_sg && bool(sg.supportedOperations & ::vk::SubgroupFeatureFlagBits::eArithmetic);
  if ((v13 || p.size_control_ext) && sscf.subgroupSizeControl &&
      (ssc.requiredSubgroupSizeStages & ::vk::ShaderStageFlagBits::eCompute)) {
    d.subgroup_size_control = true;
    d.min_subgroup_size = ssc.minSubgroupSize;
    d.max_subgroup_size = ssc.maxSubgroupSize;
    p.max_compute_workgroup_subgroups = ssc.maxComputeWorkgroupSubgroups;
    d.max_workgroup_subgroups = ssc.maxComputeWorkgroupSubgroups;
  }
  return p;
}

::vk::raii::Instance make_instance(const ::vk::raii::Context& ctx) {
  // Devices still report their own version; the runner uses min(device, instance).
  const ::vk::ApplicationInfo app{.pApplicationName = "moeoracle",
                                  .applicationVersion = 1,
                                  .pEngineName = "moeoracle",
                                  .engineVersion = 1,
                                  .apiVersion = instance_api(ctx)};
  return ::vk::raii::Instance(ctx, ::vk::InstanceCreateInfo{.pApplicationInfo = &app});
}

// One Vulkan loader and instance per process, created on first use and never torn down: each
// vk::raii::Context loads the Vulkan loader (and the driver) afresh, and NVIDIA's driver
// (580.159, GPU machine, 2026-11-22) answers vkCreateInstance with ErrorIncompatibleDriver after
// about ten load/unload cycles in one process. A failed creation (no driver) is retried next call.
struct Loader {
  ::vk::raii::Context ctx;
  ::vk::raii::Instance instance{nullptr};
};

Loader& loader() {
  static Loader* l = [] {
    auto* p = new Loader();  // intentionally never freed (see above)
    try {
      p->instance = make_instance(p->ctx);
    } catch (...) {
      delete p;
      throw;
    }
    return p;
  }();
  return *l;
}

std::string device_list(const std::vector<DeviceInfo>& devs) {
  if (devs.empty()) return "no Vulkan devices (is a Vulkan driver installed? lavapipe: mesa-vulkan-drivers)";
  std::ostringstream os;
  os << "devices:";
  for (const DeviceInfo& d : devs) os << " [" << d.index << "] " << d.name << " (" << d.type << ")";
  return os.str();
}

// The guard's byte at position j past the usable end: position-dependent, so neither a zero
// fill, a constant store nor a shifted copy of the guard itself leaves it intact.
uint8_t guard_byte(size_t j) { return static_cast<uint8_t>(((j * 0x9E3779B1u) >> 13) ^ 0xA5u); }

// What the runner checks before creating a pipeline: the GLCompute entry points and their
// workgroup sizes. A minimal parse of the module's header section (entry points, execution
// modes, decorations, constants: all precede the first OpFunction).
struct EntryPoint {
  uint32_t id = 0;
  std::string name;
  uint32_t local_size[3] = {0, 0, 0};  // 0: unknown (an id the parse cannot resolve)
};

std::vector<EntryPoint> compute_entry_points(std::span<const uint32_t> w, const std::string& label,
                                             const std::vector<SpecConstant>& spec) {
  MOE_CHECK(w.size() >= 5 && w[0] == 0x07230203u, "vulkan: " << label << ": not SPIR-V (" << w.size()
                                                             << " words, magic 0x" << std::hex
                                                             << (w.empty() ? 0u : w[0]) << ", expected 0x07230203)");
  std::vector<EntryPoint> entries;
  std::map<uint32_t, std::array<uint32_t, 3>> size_ids;  // entry id -> LocalSizeId operands
  std::map<uint32_t, uint32_t> scalar, spec_id;          // constant id -> value; id -> SpecId
  std::map<uint32_t, std::vector<uint32_t>> composite;   // composite constant id -> constituents
  uint32_t workgroup_size_id = 0;                        // the BuiltIn WorkgroupSize constant: overrides
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, op = w[i] & 0xFFFFu;
    MOE_CHECK(count > 0 && i + count <= w.size(), "vulkan: " << label << ": malformed SPIR-V at word " << i);
    const uint32_t* a = &w[i + 1];              // operands
    if (op == 54) break;                        // OpFunction
    if (op == 15 && count >= 4 && a[0] == 5) {  // OpEntryPoint GLCompute <id> "name"
      const char* name = reinterpret_cast<const char*>(&a[2]);
      entries.push_back({.id = a[1], .name = std::string(name, strnlen(name, (count - 3) * 4))});
    } else if (op == 16 && count >= 6 && a[1] == 17) {  // OpExecutionMode <entry> LocalSize x y z
      for (EntryPoint& e : entries)
        if (e.id == a[0]) std::copy(a + 2, a + 5, e.local_size);
    } else if (op == 331 && count >= 6 && a[1] == 38) {  // OpExecutionModeId <entry> LocalSizeId x y z
      size_ids[a[0]] = {a[2], a[3], a[4]};
    } else if (op == 71 && count >= 4 && a[1] == 11 && a[2] == 25) {  // OpDecorate <id> BuiltIn WorkgroupSize
      workgroup_size_id = a[0];
    } else if (op == 71 && count >= 4 && a[1] == 1) {  // OpDecorate <id> SpecId n
      spec_id[a[0]] = a[2];
    } else if ((op == 43 || op == 50) && count >= 4) {  // OpConstant / OpSpecConstant <type> <id> value
      scalar[a[1]] = a[2];
    } else if ((op == 44 || op == 51) && count >= 4) {  // Op(Spec)ConstantComposite <type> <id> parts...
      composite[a[1]].assign(a + 2, a + count - 1);
    }
    i += count;
  }
  // A constant's value, with the dispatch's specialization applied; 0 if unknown.
  const auto value = [&](uint32_t id) -> uint32_t {
    if (auto s = spec_id.find(id); s != spec_id.end())
      for (const SpecConstant& c : spec)
        if (c.id == s->second) return c.value;
    auto v = scalar.find(id);
    return v == scalar.end() ? 0u : v->second;
  };
  for (EntryPoint& e : entries) {
    if (auto ids = size_ids.find(e.id); ids != size_ids.end())
      for (int k = 0; k < 3; ++k) e.local_size[k] = value(ids->second[k]);
    if (auto parts = composite.find(workgroup_size_id);
        workgroup_size_id && parts != composite.end() && parts->second.size() == 3)
      for (int k = 0; k < 3; ++k) e.local_size[k] = value(parts->second[k]);
    else if (workgroup_size_id)
      std::fill(e.local_size, e.local_size + 3, 0u);
  }
  return entries;
}

std::string labels_of(const std::vector<Dispatch>& seq) {
  std::string s;
  for (const Dispatch& d : seq)
    s += (s.empty() ? "" : ", ") + (d.label.empty() ? std::string("(unlabelled)") : d.label);
  return s;
}

}  // namespace

std::vector<uint32_t> DeviceInfo::subgroup_sizes() const {
  if (!subgroup_size_control) return {subgroup_size};
  std::vector<uint32_t> sizes;
  for (uint32_t s = min_subgroup_size; s != 0 && s <= max_subgroup_size; s *= 2) sizes.push_back(s);
  return sizes;
}

std::vector<DeviceInfo> list_devices() {
  try {
    Loader& l = loader();
    std::vector<DeviceInfo> out;
    int index = 0;
    for (const ::vk::raii::PhysicalDevice& pd : l.instance.enumeratePhysicalDevices())
      out.push_back(probe(pd, index++, instance_api(l.ctx)).info);
    return out;
  } catch (const ::vk::SystemError&) {
    return {};  // no loader, no driver (VK_ERROR_INCOMPATIBLE_DRIVER) or no device at all
  }
}

// ---------------------------------------------------------------------------------------------
// Core and buffers

struct Core {
  ::vk::raii::PhysicalDevice physical{nullptr};
  ::vk::raii::Device device{nullptr};
  ::vk::raii::Queue queue{nullptr};
  Probe probe;
  ::vk::PhysicalDeviceMemoryProperties memory{};
};

struct Allocation {
  std::shared_ptr<Core> core;  // declared first: destroyed last
  ::vk::raii::Buffer buffer{nullptr};
  ::vk::raii::DeviceMemory memory{nullptr};
  uint8_t* mapped = nullptr;
};

// Freed buffers kept for reuse by make_buffer of the same size and guard: allocating device
// memory costs milliseconds on NVIDIA, and a compare run makes the same few sizes thousands of
// times. Owned by the Context (holding no reference to it), so buffers that outlive their Context
// simply free their memory. Capped in total bytes.
struct BufferPool {
  static constexpr size_t kMaxBytes = size_t(1) << 30;
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
    if (bytes + size + guard > kMaxBytes) return;  // dropped: its memory is freed
    bytes += size + guard;
    free.emplace(std::make_pair(size, guard), std::move(a));
  }
};

struct Buffer::Impl {
  std::shared_ptr<Allocation> alloc;
  size_t size = 0, guard = 0;
  std::weak_ptr<BufferPool> pool;
  ~Impl() {
    // Only an allocation nothing else holds (a sequence still in flight keeps its own reference).
    if (alloc && alloc.use_count() == 1)
      if (std::shared_ptr<BufferPool> p = pool.lock()) p->put(size, guard, std::move(alloc));
  }
};

Buffer::Buffer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Buffer::~Buffer() = default;
Buffer::Buffer(Buffer&&) noexcept = default;
Buffer& Buffer::operator=(Buffer&&) noexcept = default;

size_t Buffer::size() const { return live(impl_.get()).size; }

Buffer::Impl& Buffer::live(Impl* impl) {
  MOE_CHECK(impl, "vulkan buffer: used after being moved from");
  return *impl;
}

void Buffer::upload(const void* data, size_t bytes, size_t offset) {
  Impl& m = live(impl_.get());
  MOE_CHECK(offset <= m.size && bytes <= m.size - offset, "vulkan buffer: upload of " << bytes << " bytes at offset "
                                                                                      << offset << " overruns its "
                                                                                      << m.size << " bytes");
  if (bytes) std::memcpy(m.alloc->mapped + offset, data, bytes);
}

void Buffer::download(void* data, size_t bytes, size_t offset) const {
  const Impl& m = live(impl_.get());
  MOE_CHECK(offset <= m.size && bytes <= m.size - offset, "vulkan buffer: download of " << bytes << " bytes at offset "
                                                                                        << offset << " overruns its "
                                                                                        << m.size << " bytes");
  if (bytes) std::memcpy(data, m.alloc->mapped + offset, bytes);
}

void Buffer::fill_u32(uint32_t pattern) {
  Impl& m = live(impl_.get());
  uint8_t bytes[4];
  std::memcpy(bytes, &pattern, 4);
  for (size_t i = 0; i < m.size; ++i)
    m.alloc->mapped[i] = bytes[i % 4];  // a tail shorter than a word gets the first bytes
}

bool Buffer::guard_intact() const {
  const Impl& m = live(impl_.get());
  for (size_t j = 0; j < m.guard; ++j)
    if (m.alloc->mapped[m.size + j] != guard_byte(j)) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Context

namespace {

struct Pipeline {
  ::vk::raii::ShaderModule module{nullptr};
  ::vk::raii::DescriptorSetLayout set_layout{nullptr};
  ::vk::raii::PipelineLayout layout{nullptr};
  ::vk::raii::Pipeline pipeline{nullptr};
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

}  // namespace

struct Context::Impl {
  std::shared_ptr<Core> core;
  std::shared_ptr<BufferPool> pool = std::make_shared<BufferPool>();
  Context::Memory memory = Context::Memory::Readback;
  ::vk::raii::CommandPool commands{nullptr};
  // Key: every input of the pipeline and its layout, SPIR-V words included (no hash collisions).
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines;
  // A sequence that timed out; the next run waits for it before anything else.
  std::unique_ptr<InFlight> abandoned;

  Pipeline& pipeline_for(const Dispatch& d);
  void retire_abandoned(uint64_t timeout_ms);
};

Context::Context(const std::string& device, Memory memory) : impl_(std::make_unique<Impl>()) {
  impl_->memory = memory;
  const std::vector<DeviceInfo> devs = list_devices();
  MOE_CHECK(!devs.empty(), "vulkan: " << device_list(devs));
  int chosen = -1;
  if (device.empty()) {
    // A discrete GPU first, a CPU driver (lavapipe) last; ties go to the lower index.
    const auto rank = [](const std::string& t) {
      return t == "discrete" ? 0 : t == "integrated" ? 1 : t == "virtual" ? 2 : t == "other" ? 3 : 4;
    };
    for (const DeviceInfo& d : devs)
      if (chosen < 0 || rank(d.type) < rank(devs[chosen].type)) chosen = d.index;
  } else if (std::all_of(device.begin(), device.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const long idx = device.size() <= 6 ? std::stol(device) : -1;
    MOE_CHECK(idx >= 0 && idx < static_cast<long>(devs.size()),
              "vulkan: no device with index " << device << "; " << device_list(devs));
    chosen = static_cast<int>(idx);
  } else {
    for (const DeviceInfo& d : devs)
      if (lower(d.name).find(lower(device)) != std::string::npos) {
        chosen = d.index;
        break;
      }
    MOE_CHECK(chosen >= 0, "vulkan: no device name contains '" << device << "'; " << device_list(devs));
  }
  MOE_CHECK(devs[chosen].api_version >= VK_API_VERSION_1_1,
            "vulkan: device " << chosen << " (" << devs[chosen].name << ") supports Vulkan "
                              << version_string(devs[chosen].api_version) << ", the runner needs 1.1 or newer");

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

Buffer Context::make_buffer(size_t bytes, size_t guard_bytes) {
  MOE_CHECK(bytes > 0, "vulkan: make_buffer of 0 bytes (Vulkan buffers cannot be empty)");
  MOE_CHECK(bytes <= SIZE_MAX - guard_bytes,
            "vulkan: make_buffer: " << bytes << " + " << guard_bytes << " bytes overflows");
  if (std::shared_ptr<Allocation> reused = impl_->pool->take(bytes, guard_bytes)) {
    // A kernel of an earlier case may have written past its end: the guard is laid again.
    for (size_t j = 0; j < guard_bytes; ++j) reused->mapped[bytes + j] = guard_byte(j);
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
                                                                        ::vk::BufferUsageFlagBits::eTransferSrc |
                                                                        ::vk::BufferUsageFlagBits::eTransferDst,
                                                               .sharingMode = ::vk::SharingMode::eExclusive});
    const ::vk::MemoryRequirements req = alloc->buffer.getMemoryRequirements();
    // Host-visible and host-coherent always (upload and read-back are memcpy, no flush or
    // invalidate). Order (Context::Memory): Readback prefers host-cached memory that is not
    // device-local (fast host reads), then other non-local, then device-local; DeviceSpeed
    // prefers device-local (resizable BAR: kernels read at device speed, gpu_ms means
    // something), then the rest.
    const auto want = ::vk::MemoryPropertyFlagBits::eHostVisible | ::vk::MemoryPropertyFlagBits::eHostCoherent;
    auto rank = [&](::vk::MemoryPropertyFlags flags) {
      const bool local = bool(flags & ::vk::MemoryPropertyFlagBits::eDeviceLocal);
      const bool cached = bool(flags & ::vk::MemoryPropertyFlagBits::eHostCached);
      if (impl_->memory == Memory::DeviceSpeed) return local ? 0 : 1;
      return !local && cached ? 0 : !local ? 1 : 2;
    };
    std::vector<uint32_t> candidates;
    for (int pass = 0; pass < 3; ++pass)
      for (uint32_t i = 0; i < core.memory.memoryTypeCount; ++i) {
        const auto flags = core.memory.memoryTypes[i].propertyFlags;
        if ((req.memoryTypeBits >> i & 1u) && (flags & want) == want && rank(flags) == pass) candidates.push_back(i);
      }
    MOE_CHECK(!candidates.empty(),
              "vulkan: " << info().name << " offers no host-visible coherent memory for storage buffers");
    std::string last_error;
    for (uint32_t type : candidates) {
      try {
        alloc->memory = ::vk::raii::DeviceMemory(
            core.device, ::vk::MemoryAllocateInfo{.allocationSize = req.size, .memoryTypeIndex = type});
        break;
      } catch (const ::vk::OutOfDeviceMemoryError& e) {
        last_error = e.what();  // a small BAR heap: try the next type
      } catch (const ::vk::OutOfHostMemoryError& e) {
        last_error = e.what();
      }
    }
    MOE_CHECK(*alloc->memory, "vulkan: cannot allocate " << total << " bytes of host-visible memory: " << last_error);
    alloc->buffer.bindMemory(*alloc->memory, 0);
    alloc->mapped = static_cast<uint8_t*>(alloc->memory.mapMemory(0, VK_WHOLE_SIZE));
  } catch (const ::vk::SystemError& e) {
    MOE_FAIL("vulkan: make_buffer(" << bytes << " + guard " << guard_bytes << "): " << e.what());
  }
  for (size_t j = 0; j < guard_bytes; ++j) alloc->mapped[bytes + j] = guard_byte(j);
  auto impl = std::make_unique<Buffer::Impl>();
  impl->alloc = std::move(alloc);
  impl->size = bytes;
  impl->guard = guard_bytes;
  impl->pool = impl_->pool;
  return Buffer(std::move(impl));
}

Pipeline& Context::Impl::pipeline_for(const Dispatch& d) {
  const DeviceInfo& info = core->probe.info;
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
    MOE_CHECK(entry->local_size[k] <= core->probe.max_workgroup_size[k],
              "vulkan: " << label << ": local_size[" << k << "] = " << entry->local_size[k]
                         << " exceeds maxComputeWorkGroupSize " << core->probe.max_workgroup_size[k] << " of "
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
    const uint64_t most = uint64_t(core->probe.max_compute_workgroup_subgroups) * s;
    MOE_CHECK(invocations <= most,
              "vulkan: " << label << ": workgroup of " << invocations << " invocations at subgroup size " << s
                         << " exceeds maxComputeWorkgroupSubgroups x size = " << most << " of " << info.name);
  }
  for (size_t i = 0; i < d.spec_constants.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      MOE_CHECK(d.spec_constants[i].id != d.spec_constants[j].id,
                "vulkan: " << label << ": specialization constant " << d.spec_constants[i].id << " is given twice");
  MOE_CHECK(d.push_constants.size() % 4 == 0 && d.push_constants.size() <= core->probe.max_push_constants,
            "vulkan: " << label << ": " << d.push_constants.size()
                       << " bytes of push constants; expected a multiple of 4, at most "
                       << core->probe.max_push_constants);

  // The key: everything the pipeline and its layout depend on.
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
  put32(static_cast<uint32_t>(d.push_constants.size()));
  std::vector<uint32_t> slots;
  for (const Binding& b : d.bindings) slots.push_back(b.binding);
  std::sort(slots.begin(), slots.end());
  for (uint32_t s : slots) put32(s);
  if (auto it = pipelines.find(key); it != pipelines.end()) return *it->second;

  auto p = std::make_unique<Pipeline>();
  const ::vk::raii::Device& dev = core->device;
  p->module = ::vk::raii::ShaderModule(
      dev, ::vk::ShaderModuleCreateInfo{.codeSize = d.spirv.size_bytes(), .pCode = d.spirv.data()});
  std::vector<::vk::DescriptorSetLayoutBinding> lb;
  for (uint32_t s : slots)
    lb.push_back({.binding = s,
                  .descriptorType = ::vk::DescriptorType::eStorageBuffer,
                  .descriptorCount = 1,
                  .stageFlags = ::vk::ShaderStageFlagBits::eCompute});
  p->set_layout = ::vk::raii::DescriptorSetLayout(
      dev,
      ::vk::DescriptorSetLayoutCreateInfo{.bindingCount = static_cast<uint32_t>(lb.size()), .pBindings = lb.data()});
  const ::vk::PushConstantRange pcr{.stageFlags = ::vk::ShaderStageFlagBits::eCompute,
                                    .offset = 0,
                                    .size = static_cast<uint32_t>(d.push_constants.size())};
  const ::vk::DescriptorSetLayout set_layout = *p->set_layout;
  p->layout = ::vk::raii::PipelineLayout(
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
                                                  .module = *p->module,
                                                  .pName = d.entry.c_str(),
                                                  .pSpecializationInfo = map.empty() ? nullptr : &spec};
  p->pipeline =
      ::vk::raii::Pipeline(dev, nullptr, ::vk::ComputePipelineCreateInfo{.stage = stage, .layout = *p->layout});
  return *pipelines.emplace(std::move(key), std::move(p)).first->second;
}

void Context::Impl::retire_abandoned(uint64_t timeout_ms) {
  if (!abandoned) return;
  const ::vk::Result r = core->device.waitForFences(*abandoned->fence, VK_TRUE, timeout_ms * 1'000'000ull);
  MOE_CHECK(r == ::vk::Result::eSuccess, "vulkan: an earlier sequence that timed out ("
                                             << abandoned->labels << ") is still running after " << timeout_ms
                                             << " more ms; nothing new can run");
  abandoned.reset();
}

RunResult Context::run(const std::vector<Dispatch>& sequence, uint64_t timeout_ms) {
  MOE_CHECK(!sequence.empty(), "vulkan: run() of an empty sequence");
  MOE_CHECK(timeout_ms <= UINT64_MAX / 1'000'000ull, "vulkan: timeout of " << timeout_ms << " ms is too long");
  Impl& m = *impl_;
  const DeviceInfo& info = m.core->probe.info;
  const std::string labels = labels_of(sequence);
  // Check every argument before anything is recorded: a bad binding is the caller's error, and
  // Vulkan would only answer it with undefined behaviour.
  uint32_t descriptors = 0;
  for (const Dispatch& d : sequence) {
    const std::string& label = d.label;
    for (int k = 0; k < 3; ++k)
      MOE_CHECK(d.groups[k] >= 1 && d.groups[k] <= info.max_workgroup_count[k],
                "vulkan: " << label << ": groups[" << k << "] = " << d.groups[k] << ", expected 1.."
                           << info.max_workgroup_count[k]);
    MOE_CHECK(d.bindings.size() <= m.core->probe.max_storage_buffers_per_stage,
              "vulkan: " << label << ": " << d.bindings.size() << " storage buffers, the device allows "
                         << m.core->probe.max_storage_buffers_per_stage);
    for (size_t i = 0; i < d.bindings.size(); ++i) {
      const Binding& b = d.bindings[i];
      MOE_CHECK(b.buffer && b.buffer->impl_, "vulkan: " << label << ": binding " << b.binding << " has no buffer");
      MOE_CHECK(b.buffer->impl_->alloc->core == m.core,
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
      const uint64_t range = b.range ? b.range : size - b.offset;
      MOE_CHECK(range <= size - b.offset, "vulkan: " << label << ": binding " << b.binding << " range " << range
                                                     << " at offset " << b.offset << " overruns its " << size
                                                     << "-byte buffer");
      MOE_CHECK(range <= info.max_storage_buffer_range, "vulkan: " << label << ": binding " << b.binding << " range "
                                                                   << range << " exceeds maxStorageBufferRange "
                                                                   << info.max_storage_buffer_range << " of "
                                                                   << info.name);
    }
    descriptors += static_cast<uint32_t>(d.bindings.size());
  }
  m.retire_abandoned(timeout_ms);

  RunResult result;
  auto job = std::make_unique<InFlight>();
  job->labels = labels;
  try {
    std::vector<Pipeline*> pipes;
    for (const Dispatch& d : sequence) pipes.push_back(&m.pipeline_for(d));
    const ::vk::raii::Device& dev = m.core->device;
    const uint32_t n = static_cast<uint32_t>(sequence.size());
    const ::vk::DescriptorPoolSize pool_size{.type = ::vk::DescriptorType::eStorageBuffer,
                                             .descriptorCount = std::max(descriptors, 1u)};
    job->pool = ::vk::raii::DescriptorPool(
        dev, ::vk::DescriptorPoolCreateInfo{.maxSets = n, .poolSizeCount = 1, .pPoolSizes = &pool_size});
    std::vector<::vk::DescriptorSetLayout> layouts;
    for (Pipeline* p : pipes) layouts.push_back(*p->set_layout);
    // Plain handles: the sets go with their pool when the sequence is done.
    const std::vector<::vk::DescriptorSet> sets = (*dev).allocateDescriptorSets(::vk::DescriptorSetAllocateInfo{
        .descriptorPool = *job->pool, .descriptorSetCount = n, .pSetLayouts = layouts.data()});
    std::vector<::vk::DescriptorBufferInfo> buffer_infos;
    buffer_infos.reserve(descriptors);
    std::vector<::vk::WriteDescriptorSet> writes;
    for (uint32_t i = 0; i < n; ++i)
      for (const Binding& b : sequence[i].bindings) {
        const std::shared_ptr<Allocation>& a = b.buffer->impl_->alloc;
        job->buffers.push_back(a);
        const uint64_t size = b.buffer->size(), range = b.range ? b.range : size - b.offset;
        // Reaching the usable end: expose the guard too (see Binding), within the device's limit.
        const uint64_t bound = b.offset + range == size
                                   ? std::min<uint64_t>(range + b.buffer->impl_->guard, info.max_storage_buffer_range)
                                   : range;
        buffer_infos.push_back({.buffer = *a->buffer, .offset = b.offset, .range = bound});
        writes.push_back({.dstSet = sets[i],
                          .dstBinding = b.binding,
                          .dstArrayElement = 0,
                          .descriptorCount = 1,
                          .descriptorType = ::vk::DescriptorType::eStorageBuffer,
                          .pBufferInfo = &buffer_infos.back()});
      }
    if (!writes.empty()) dev.updateDescriptorSets(writes, nullptr);

    const bool timed = info.timestamp_period_ns > 0;
    if (timed)
      job->queries = ::vk::raii::QueryPool(
          dev, ::vk::QueryPoolCreateInfo{.queryType = ::vk::QueryType::eTimestamp, .queryCount = 2 * n});
    job->cmd = std::move(dev.allocateCommandBuffers(::vk::CommandBufferAllocateInfo{
        .commandPool = *m.commands, .level = ::vk::CommandBufferLevel::ePrimary, .commandBufferCount = 1})[0]);
    ::vk::raii::CommandBuffer& cmd = job->cmd;
    cmd.begin(::vk::CommandBufferBeginInfo{.flags = ::vk::CommandBufferUsageFlagBits::eOneTimeSubmit});
    if (timed) cmd.resetQueryPool(*job->queries, 0, 2 * n);
    for (uint32_t i = 0; i < n; ++i) {
      const Dispatch& d = sequence[i];
      if (i > 0) {
        // Dispatch i may read (or overwrite) what dispatch i-1 wrote.
        const ::vk::MemoryBarrier barrier{
            .srcAccessMask = ::vk::AccessFlagBits::eShaderWrite,
            .dstAccessMask = ::vk::AccessFlagBits::eShaderRead | ::vk::AccessFlagBits::eShaderWrite};
        cmd.pipelineBarrier(::vk::PipelineStageFlagBits::eComputeShader, ::vk::PipelineStageFlagBits::eComputeShader,
                            {}, barrier, nullptr, nullptr);
      }
      cmd.bindPipeline(::vk::PipelineBindPoint::eCompute, *pipes[i]->pipeline);
      cmd.bindDescriptorSets(::vk::PipelineBindPoint::eCompute, *pipes[i]->layout, 0, sets[i], nullptr);
      if (!d.push_constants.empty())
        cmd.pushConstants<uint8_t>(*pipes[i]->layout, ::vk::ShaderStageFlagBits::eCompute, 0, d.push_constants);
      // Bottom of pipe on both sides: the first latches once everything before it (the
      // previous dispatch) has finished, the second once this dispatch has.
      if (timed) cmd.writeTimestamp(::vk::PipelineStageFlagBits::eBottomOfPipe, *job->queries, 2 * i);
      cmd.dispatch(d.groups[0], d.groups[1], d.groups[2]);
      if (timed) cmd.writeTimestamp(::vk::PipelineStageFlagBits::eBottomOfPipe, *job->queries, 2 * i + 1);
    }
    // Shader writes become visible to the host's reads of the mapped memory after the fence.
    const ::vk::MemoryBarrier to_host{.srcAccessMask = ::vk::AccessFlagBits::eShaderWrite,
                                      .dstAccessMask = ::vk::AccessFlagBits::eHostRead};
    cmd.pipelineBarrier(::vk::PipelineStageFlagBits::eComputeShader, ::vk::PipelineStageFlagBits::eHost, {}, to_host,
                        nullptr, nullptr);
    cmd.end();

    job->fence = ::vk::raii::Fence(dev, ::vk::FenceCreateInfo{});
    const ::vk::CommandBuffer cb = *cmd;
    const auto t0 = std::chrono::steady_clock::now();
    // Host writes to coherent memory before the submit are visible to it (queue submission
    // is a host-write -> device-access dependency).
    m.core->queue.submit(::vk::SubmitInfo{.commandBufferCount = 1, .pCommandBuffers = &cb}, *job->fence);
    const ::vk::Result r = dev.waitForFences(*job->fence, VK_TRUE, timeout_ms * 1'000'000ull);
    result.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r != ::vk::Result::eSuccess) {
      m.abandoned = std::move(job);  // the device may still use all of it
      MOE_FAIL("vulkan: kernel hung or too slow: " << labels << " did not finish within " << timeout_ms << " ms on "
                                                   << info.name);
    }
    if (timed) {
      const auto [qr, stamps] =
          job->queries.getResults<uint64_t>(0, 2 * n, 2 * n * sizeof(uint64_t), sizeof(uint64_t),
                                            ::vk::QueryResultFlagBits::e64 | ::vk::QueryResultFlagBits::eWait);
      MOE_CHECK(qr == ::vk::Result::eSuccess,
                "vulkan: timestamps of " << labels << " not available: " << ::vk::to_string(qr));
      const uint32_t bits = m.core->probe.timestamp_bits;
      const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
      for (uint32_t i = 0; i < n; ++i) {
        const uint64_t ticks = (stamps[2 * i + 1] - stamps[2 * i]) & mask;  // modular: survives a wrap
        result.gpu_ms.push_back(static_cast<double>(ticks) * info.timestamp_period_ns * 1e-6);
      }
    }
  } catch (const ::vk::SystemError& e) {
    MOE_FAIL("vulkan: running " << labels << " on " << info.name << ": " << e.what());
  }
  return result;
}

}  // namespace moe::vk
