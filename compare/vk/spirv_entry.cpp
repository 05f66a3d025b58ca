// The SPIR-V header parse behind the runner's pre-pipeline check (see runner_internal.h).
#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "compare/vk/runner_internal.h"
#include "core/check.h"

namespace moe::vk::detail {

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

}  // namespace moe::vk::detail
