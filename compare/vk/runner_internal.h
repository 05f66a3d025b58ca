// Internal to the Vulkan runner (compare/vk/*.cpp): device discovery shared by list_devices() and
// Context, and the SPIR-V entry-point parse. Not part of the runner's interface (runner.h).
#pragma once

#include <span>
#include <string>
#include <vector>
#include <vulkan/vulkan_raii.hpp>

#include "compare/vk/runner.h"

namespace moe::vk::detail {

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
// `api`: the instance's version; a device is used at min(its version, the instance's).
Probe probe(const ::vk::raii::PhysicalDevice& pd, int index, uint32_t api);

std::string lower(std::string s);
std::string version_string(uint32_t v);
// "devices: [0] name (type) ...", or why there are none.
std::string device_list(const std::vector<DeviceInfo>& devs);

// One Vulkan loader and instance per process, created on first use and never torn down: each
// vk::raii::Context loads the Vulkan loader (and the driver) afresh, and NVIDIA's driver
// (580.159, GPU machine, 2026-11-22) answers vkCreateInstance with ErrorIncompatibleDriver after
// about ten load/unload cycles in one process. A failed creation (no driver) is retried next call.
struct Loader {
  ::vk::raii::Context ctx;
  ::vk::raii::Instance instance{nullptr};
};
Loader& loader();

// The API version the instance asks for: the newest this code knows (1.3) that the loader offers.
uint32_t instance_api(const ::vk::raii::Context& ctx);

// What the runner checks before creating a pipeline: the GLCompute entry points and their
// workgroup sizes. A minimal parse of the module's header section (entry points, execution
// modes, decorations, constants: all precede the first OpFunction).
struct EntryPoint {
  uint32_t id = 0;
  std::string name;
  uint32_t local_size[3] = {0, 0, 0};  // 0: unknown (an id the parse cannot resolve)
};
std::vector<EntryPoint> compute_entry_points(std::span<const uint32_t> words, const std::string& label,
                                             const std::vector<SpecConstant>& spec);

// The integer arithmetic of the OpSpecConstantOps that array lengths take (R * TT,
// gl_WorkGroupSize.x / 4), shared by the poison and the access checks: v = x <opcode> y; false
// for any other opcode and where the result is undefined (a division by 0, a shift past 31).
inline bool spec_int_op(uint32_t opcode, uint32_t x, uint32_t y, uint32_t& v) {
  switch (opcode) {  // SPIR-V opcode numbers
    case 128: v = x + y; return true;  // OpIAdd
    case 130: v = x - y; return true;  // OpISub
    case 132: v = x * y; return true;  // OpIMul
    case 134: return y != 0 && (v = x / y, true);  // OpUDiv
    case 137: return y != 0 && (v = x % y, true);  // OpUMod
    case 194: return y < 32 && (v = x >> y, true);  // OpShiftRightLogical
    case 196: return y < 32 && (v = x << y, true);  // OpShiftLeftLogical
    default: return false;
  }
}

// The module with every Function- and Private-storage variable that has no initializer given
// one filled with a poison pattern (floats a NaN, integers 0xFEFEFEFE, bools true): a kernel
// that reads a local before writing it shows that on every driver, not only where registers
// happen to hold garbage (spirv_poison.cpp). An array sized by a specialization constant takes
// the length `spec` gives it (else the default). Variables of types without a constant form
// (pointers, lengths no specialization can fix) are left as they are; lengths computed by
// integer OpSpecConstantOps (float acc[R * TT]) are evaluated. Returns the module unchanged when
// nothing needs it.
std::vector<uint32_t> poison_locals(std::span<const uint32_t> words, const std::string& label,
                                    const std::vector<SpecConstant>& spec);

// The module with every dynamic index into an array, a storage buffer's runtime array (against
// the binding's usable size), a vector or a matrix, and every scalar shift amount checked before
// use (spirv_access_checker.h): an out-of-range one records its site and is clamped to index 0.
// Loads and stores of Workgroup arrays and scalars are checked for data races between
// invocations (an element another invocation stored, or loaded, since the last workgroup
// barrier; per subgroup in a module with subgroup-scope barriers) and for reads of elements no
// invocation stored, where the workgroup size is known and a shadow of 4 bytes per element (8
// for the loads) fits beside the kernel's in `max_shared_bytes`; loads of the elements of `bare_vars` (locals
// declared without an initializer) for elements the invocation never stored. The entry point's
// returns publish the highest violated site code with an atomic max into word 0 of
// a storage buffer at set 0, `binding` (the first number >= min_binding that the module does not
// use), whose word 1 + j holds the element count of `lengths[j]`: (usable bytes of the binding -
// offset) / stride, 0 when the binding is shorter than the offset. A code is 0 (none) or the 1-based
// site plus its rank times kAccessSiteRank: an index or shift (2) outranks the data races and
// uninitialised reads (1) its clamped index may cause, and those outrank a NaN operand of min,
// max or clamp (0) that such a read may deliver; `sites[i]` describes site i + 1. min / max /
// clamp (GLSL.std.450 FMin, FMax, FClamp) with a NaN operand: which operand the result is, is
// undefined (a driver may return the NaN or the other one).
// Storage buffers the kernel stores to with plain stores are checked for races between
// workgroups of one dispatch (nothing orders them): a load or store of an element another
// workgroup stored, or a store to one another workgroup loaded, each access through a pointer to
// a whole element of the buffer's runtime array; `lengths` entries with `shadow` set locate the
// shadows. A module with a device-scope barrier is not checked so (it may order workgroups).
// Empty `words`: nothing to check (no entry point `entry`, no access).
constexpr uint32_t kAccessSiteRank = 0x10000u;
struct AccessLimits {
  uint32_t min_binding = 0;
  std::vector<SpecConstant> spec;  // the dispatch's, for lengths of shared arrays
  uint32_t invocations = 0;        // per workgroup (0: unknown, no race checks)
  uint64_t max_shared_bytes = 0;   // the device's maxComputeSharedMemorySize
  uint32_t subgroup_size = 0;      // the dispatch's, where known (pinned, or the device has one): shuffle ids
  std::vector<uint32_t> bare_vars;  // Function/Private variables declared without an initializer
};
// The Function- and Private-storage variables of a module declared without an initializer.
std::vector<uint32_t> bare_variables(std::span<const uint32_t> words);
struct RuntimeLength {
  uint32_t binding = 0, offset = 0, stride = 0;  // a runtime array member of a buffer block
  // Instead of the element count n, the slot holds where the member's workgroup shadow starts
  // in the check buffer's words after word 0 (two words per element: the writer, then the
  // readers), with bit 31 set; where the runner gave it none (too large), where its scratch pair
  // starts, bit 31 clear: the kernel then records nothing for this buffer.
  bool shadow = false;
  bool operator==(const RuntimeLength&) const = default;
};
// Two words per element; the runner gives no shadow past this many words in one check buffer.
constexpr uint64_t kMaxGlobalShadowWords = uint64_t(1) << 26;
// Places the workgroup shadows of a check buffer's `lens` (compare/vk/runner.cpp): `init` holds
// word 0 and a slot per entry (its element count); returns with each shadow slot set, and the
// buffer's words grown to hold the shadows that fit in `max_words`.
void place_global_shadows(const std::vector<RuntimeLength>& lens, std::vector<uint32_t>& init, uint64_t max_words);
struct AccessCheck {
  std::vector<uint32_t> words;
  uint32_t binding = 0;
  std::vector<std::string> sites;
  std::vector<RuntimeLength> lengths;
};
AccessCheck check_access(std::span<const uint32_t> words, const std::string& label, const std::string& entry,
                         const AccessLimits& limits);

}  // namespace moe::vk::detail
