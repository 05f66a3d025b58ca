// Device discovery: the process's one Vulkan loader and instance, and what each physical device
// offers (driver, subgroup sizes and size control, limits, timestamps), and which one a Context opens.
#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>

#include "compare/vk/runner_internal.h"
#include "core/check.h"

namespace moe::vk {
using namespace detail;
namespace {

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

::vk::raii::Instance make_instance(const ::vk::raii::Context& ctx) {
  // Devices still report their own version; the runner uses min(device, instance).
  const ::vk::ApplicationInfo app{.pApplicationName = "moeoracle",
                                  .applicationVersion = 1,
                                  .pEngineName = "moeoracle",
                                  .engineVersion = 1,
                                  .apiVersion = instance_api(ctx)};
  return ::vk::raii::Instance(ctx, ::vk::InstanceCreateInfo{.pApplicationInfo = &app});
}

}  // namespace

namespace detail {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string version_string(uint32_t v) {
  std::ostringstream os;
  os << VK_API_VERSION_MAJOR(v) << '.' << VK_API_VERSION_MINOR(v) << '.' << VK_API_VERSION_PATCH(v);
  return os.str();
}

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
  d.max_uniform_buffer_range = lim.maxUniformBufferRange;
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
  const ::vk::PhysicalDeviceMemoryProperties mem = pd.getMemoryProperties();
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    d.heaps.push_back({.size = mem.memoryHeaps[h].size,
                       .device_local = bool(mem.memoryHeaps[h].flags & ::vk::MemoryHeapFlagBits::eDeviceLocal)});
  const auto visible = ::vk::MemoryPropertyFlagBits::eHostVisible | ::vk::MemoryPropertyFlagBits::eHostCoherent;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i)
    if ((mem.memoryTypes[i].propertyFlags & visible) == visible)
      d.heaps[mem.memoryTypes[i].heapIndex].host_visible = true;
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

}  // namespace detail

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

int choose_device(const std::vector<DeviceInfo>& devs, const std::string& device) {
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
  return chosen;
}

}  // namespace moe::vk
