// `moeoracle devices`: every Vulkan device the loader reports, one block each, with what decides
// whether a kernel set can be gated on it (subgroup sizes, storage buffer and shared memory
// limits, timestamps, the driver's loop limit). Exit 0; "no Vulkan devices" and exit 2 when none.
#include <vulkan/vulkan_core.h>

#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "compare/vk/runner.h"

namespace moe::cli {
namespace {

std::string bytes_string(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%llu bytes (%.1f GiB)", static_cast<unsigned long long>(b),
                  double(b) / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%llu bytes (%.1f MiB)", static_cast<unsigned long long>(b),
                  double(b) / double(1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes (%.1f KiB)", static_cast<unsigned long long>(b), double(b) / 1024.0);
  return buf;
}

int list_devices_command() {
  const std::vector<vk::DeviceInfo> devs = vk::list_devices();
  if (devs.empty()) {
    std::printf("no Vulkan devices (is a Vulkan driver installed? lavapipe: mesa-vulkan-drivers)\n");
    return 2;
  }
  for (const vk::DeviceInfo& d : devs) {
    if (d.index > 0) std::printf("\n");
    std::printf("device %d: %s\n", d.index, d.name.c_str());
    std::printf("  driver:              %s\n", d.driver.c_str());
    std::printf("  type:                %s\n", d.type.c_str());
    std::printf("  api version:         %u.%u.%u%s\n", VK_API_VERSION_MAJOR(d.api_version),
                VK_API_VERSION_MINOR(d.api_version), VK_API_VERSION_PATCH(d.api_version),
                d.api_version < VK_API_VERSION_1_1 ? " (the runner needs 1.1)" : "");
    std::string sizes;
    for (uint32_t s : d.subgroup_sizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
    std::printf("  subgroup sizes:      %s (default %u; size control: %s)\n", sizes.c_str(), d.subgroup_size,
                d.subgroup_size_control ? "yes" : "no");
    std::printf("  subgroup arithmetic: %s\n", d.subgroup_arithmetic ? "yes" : "no");
    std::printf("  max storage buffer:  %s\n", bytes_string(d.max_storage_buffer_range).c_str());
    std::printf("  max uniform buffer:  %s\n", bytes_string(d.max_uniform_buffer_range).c_str());
    std::printf("  shared memory:       %s\n", bytes_string(d.max_shared_memory).c_str());
    std::printf("  max workgroup:       %u invocations; groups %u x %u x %u\n", d.max_workgroup_invocations,
                d.max_workgroup_count[0], d.max_workgroup_count[1], d.max_workgroup_count[2]);
    if (d.timestamp_period_ns > 0)
      std::printf("  timestamps:          yes (%g ns per tick)\n", double(d.timestamp_period_ns));
    else
      std::printf("  timestamps:          no (gpu_ms is not measured)\n");
    for (size_t h = 0; h < d.heaps.size(); ++h)
      std::printf("  memory heap %zu:       %s%s%s\n", h, bytes_string(d.heaps[h].size).c_str(),
                  d.heaps[h].device_local ? ", device-local" : ", system",
                  d.heaps[h].host_visible ? ", host-visible" : "");
    if (d.loop_iteration_limit > 0)
      std::printf(
          "  loop limit:          %u iterations per invocation, all loops together (longer loops are cut short)\n",
          d.loop_iteration_limit);
  }
  return 0;
}

}  // namespace

Command add_devices(CLI::App& app) {
  return {app.add_subcommand("devices", "List Vulkan devices: driver, subgroup sizes, limits, timestamps"),
          [] { return list_devices_command(); }};
}

}  // namespace moe::cli
