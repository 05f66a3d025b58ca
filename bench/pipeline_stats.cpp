// pipeline_stats: what the driver says it made of a compute shader (VK_KHR_pipeline_executable_
// properties): registers, spills, shared memory, subgroup size, as the driver names them. Why: a
// kernel that is neither at the memory nor at the arithmetic ceiling may be held back by its
// register count (occupancy) or by spills, which no timing shows directly.
// --ir DIR also writes the driver's internal representations (e.g. its assembly), when it offers
// any, to DIR/<executable>-<n>.txt: the instruction count per weight is what bounds the
// quantized matvecs at mid-size shapes (docs/benchmarks.md), and only the driver's code shows it.
// Usage: pipeline_stats SPV [--device SUBSTR] [--spec ID=VALUE]... [--entry NAME] [--ir DIR]
// Exit 0 with the statistics; 2 when the driver offers no statistics or the input is bad.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

namespace {

struct Args {
  std::string spv, device, entry = "main", ir;
  std::vector<std::pair<uint32_t, uint32_t>> spec;
};

int usage(const std::string& why) {
  std::cerr << "pipeline_stats: " << why << "\nusage: pipeline_stats SPV [--device SUBSTR] [--spec ID=VALUE]... [--entry NAME] [--ir DIR]\n";
  return 2;
}

bool parse(int argc, char** argv, Args& a, std::string& err) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const bool has_value = i + 1 < argc;
    if (s == "--device" && has_value) {
      a.device = argv[++i];
    } else if (s == "--ir" && has_value) {
      a.ir = argv[++i];
    } else if (s == "--entry" && has_value) {
      a.entry = argv[++i];
    } else if (s == "--spec" && has_value) {
      const std::string kv = argv[++i];
      const size_t eq = kv.find('=');
      try {
        if (eq == std::string::npos) throw std::invalid_argument(kv);
        a.spec.emplace_back(uint32_t(std::stoul(kv.substr(0, eq))), uint32_t(std::stoul(kv.substr(eq + 1))));
      } catch (const std::exception&) {
        err = "--spec " + kv + ": expected ID=VALUE (unsigned integers)";
        return false;
      }
    } else if (a.spv.empty() && !s.empty() && s[0] != '-') {
      a.spv = s;
    } else {
      err = "unexpected argument '" + s + "'";
      return false;
    }
  }
  if (a.spv.empty()) err = "no SPIR-V file given";
  return err.empty();
}

std::string value_text(const vk::PipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case vk::PipelineExecutableStatisticFormatKHR::eBool32: return s.value.b32 ? "true" : "false";
    case vk::PipelineExecutableStatisticFormatKHR::eInt64: return std::to_string(s.value.i64);
    case vk::PipelineExecutableStatisticFormatKHR::eUint64: return std::to_string(s.value.u64);
    case vk::PipelineExecutableStatisticFormatKHR::eFloat64: return std::to_string(s.value.f64);
  }
  return "?";
}

// Writes executable i's internal representations to DIR/<i>-<n>.txt (text ones as they are, binary
// ones as bytes) and says what each was; a driver that offers none says so.
void write_internal(const vk::raii::Device& dev, vk::Pipeline pipe, uint32_t i, const std::string& dir) {
  const VkPipelineExecutableInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, nullptr, pipe, i};
  auto fn = dev.getDispatcher()->vkGetPipelineExecutableInternalRepresentationsKHR;
  uint32_t n = 0;
  fn(*dev, &info, &n, nullptr);
  if (n == 0) {
    std::cout << "  (no internal representations offered)\n";
    return;
  }
  VkPipelineExecutableInternalRepresentationKHR blank{};
  blank.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR;
  std::vector<VkPipelineExecutableInternalRepresentationKHR> reps(n, blank);
  fn(*dev, &info, &n, reps.data());  // sizes
  std::vector<std::vector<char>> data(n);
  for (uint32_t k = 0; k < n; ++k) {
    data[k].resize(reps[k].dataSize);
    reps[k].pData = data[k].data();
  }
  fn(*dev, &info, &n, reps.data());
  for (uint32_t k = 0; k < n; ++k) {
    const std::string path = dir + "/" + std::to_string(i) + "-" + std::to_string(k) + ".txt";
    std::ofstream out(path, std::ios::binary);
    size_t size = reps[k].dataSize;
    if (reps[k].isText && size > 0 && data[k][size - 1] == '\0') --size;  // text ends with a NUL
    out.write(data[k].data(), std::streamsize(size));
    std::cout << "  internal representation " << k << ": " << reps[k].name << " (" << reps[k].description << "), "
              << reps[k].dataSize << " bytes" << (reps[k].isText ? " of text" : "") << " -> " << path << "\n";
  }
}

int run(const Args& a) {
  std::ifstream f(a.spv, std::ios::binary | std::ios::ate);
  if (!f) return usage(a.spv + ": cannot be read");
  const std::streamsize bytes = f.tellg();
  if (bytes <= 0 || bytes % 4 != 0) return usage(a.spv + ": " + std::to_string(bytes) + " bytes, expected a positive multiple of 4 (SPIR-V words)");
  std::vector<uint32_t> words(size_t(bytes) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(words.data()), bytes);
  if (words[0] != 0x07230203u) return usage(a.spv + ": no SPIR-V magic number");

  vk::raii::Context ctx;
  const vk::ApplicationInfo app{.pApplicationName = "pipeline_stats", .apiVersion = VK_API_VERSION_1_2};
  vk::raii::Instance inst(ctx, vk::InstanceCreateInfo{.pApplicationInfo = &app});
  for (vk::raii::PhysicalDevice& pd : vk::raii::PhysicalDevices(inst)) {
    const std::string name = pd.getProperties().deviceName.data();
    if (!a.device.empty() && name.find(a.device) == std::string::npos) continue;
    std::cout << "device: " << name << "\n";
    bool offered = false;
    for (const auto& e : pd.enumerateDeviceExtensionProperties())
      offered |= std::string(e.extensionName.data()) == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    if (!offered) {
      std::cout << "the driver does not offer " VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME "\n";
      return 2;
    }
    uint32_t family = 0;
    for (const auto& q : pd.getQueueFamilyProperties()) {
      if (q.queueFlags & vk::QueueFlagBits::eCompute) break;
      ++family;
    }
    const float prio = 1.0f;
    const vk::DeviceQueueCreateInfo qi{.queueFamilyIndex = family, .queueCount = 1, .pQueuePriorities = &prio};
    vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR feat{.pipelineExecutableInfo = VK_TRUE};
    const char* ext = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    vk::raii::Device dev(pd, vk::DeviceCreateInfo{.pNext = &feat, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi,
                                                  .enabledExtensionCount = 1, .ppEnabledExtensionNames = &ext});
    vk::raii::ShaderModule mod(dev, vk::ShaderModuleCreateInfo{.codeSize = words.size() * 4, .pCode = words.data()});
    // The layout must declare every binding the shader uses: set 0, bindings 0..15 as storage
    // buffers, and 128 bytes of push constants (the matvec / matmul / permute kernels' shape).
    std::vector<vk::DescriptorSetLayoutBinding> lb;
    for (uint32_t b = 0; b < 16; ++b)
      lb.push_back({.binding = b, .descriptorType = vk::DescriptorType::eStorageBuffer, .descriptorCount = 1,
                    .stageFlags = vk::ShaderStageFlagBits::eCompute});
    vk::raii::DescriptorSetLayout dsl(dev, vk::DescriptorSetLayoutCreateInfo{.bindingCount = uint32_t(lb.size()), .pBindings = lb.data()});
    const vk::DescriptorSetLayout dsl_h = *dsl;
    const vk::PushConstantRange pcr{.stageFlags = vk::ShaderStageFlagBits::eCompute, .offset = 0, .size = 128};
    vk::raii::PipelineLayout layout(dev, vk::PipelineLayoutCreateInfo{.setLayoutCount = 1, .pSetLayouts = &dsl_h,
                                                                      .pushConstantRangeCount = 1, .pPushConstantRanges = &pcr});
    std::vector<vk::SpecializationMapEntry> map;
    std::vector<uint32_t> values;
    for (auto [id, v] : a.spec) {
      map.push_back({.constantID = id, .offset = uint32_t(4 * values.size()), .size = 4});
      values.push_back(v);
    }
    const vk::SpecializationInfo si{.mapEntryCount = uint32_t(map.size()), .pMapEntries = map.data(),
                                    .dataSize = 4 * values.size(), .pData = values.data()};
    const vk::PipelineShaderStageCreateInfo stage{.stage = vk::ShaderStageFlagBits::eCompute, .module = *mod,
                                                  .pName = a.entry.c_str(), .pSpecializationInfo = map.empty() ? nullptr : &si};
    vk::PipelineCreateFlags flags = vk::PipelineCreateFlagBits::eCaptureStatisticsKHR;
    if (!a.ir.empty()) flags |= vk::PipelineCreateFlagBits::eCaptureInternalRepresentationsKHR;
    vk::raii::Pipeline pipe(dev, nullptr, vk::ComputePipelineCreateInfo{.flags = flags,
                                                                        .stage = stage, .layout = *layout});
    const auto execs = dev.getPipelineExecutablePropertiesKHR(vk::PipelineInfoKHR{.pipeline = *pipe});
    for (uint32_t i = 0; i < execs.size(); ++i) {
      std::cout << "executable " << i << ": " << execs[i].name.data() << " (" << execs[i].description.data()
                << "), subgroup size " << execs[i].subgroupSize << "\n";
      for (const auto& s : dev.getPipelineExecutableStatisticsKHR(vk::PipelineExecutableInfoKHR{.pipeline = *pipe, .executableIndex = i}))
        std::cout << "  " << s.name.data() << " = " << value_text(s) << "  (" << s.description.data() << ")\n";
      if (!a.ir.empty()) write_internal(dev, *pipe, i, a.ir);
    }
    return 0;
  }
  std::cout << "no Vulkan device" << (a.device.empty() ? "" : " matches '" + a.device + "'") << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string err;
  if (!parse(argc, argv, a, err)) return usage(err);
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "pipeline_stats: " << a.spv << ": " << e.what() << "\n";
    return 2;
  }
}
