// Kernel manifests (design.md "Kernel manifests"): how a GPU kernel set — the bundled one or any
// engine's — is described, so kernels from another repository are gated without changing them.
// docs/manifests.md describes the format field by field. A manifest is JSON:
// {
//   "name": "bundled", "version": 1,
//   "kernels": [{
//     "name": "rmsnorm_f32",
//     "ops": ["rmsnorm"],                       // the op, or the sequence of ops it fuses (op_list.def names)
//     "spirv": "rmsnorm.spv" | "glsl": "rmsnorm.comp",   // relative to the manifest's folder
//     "glsl_target": "vulkan1.2",               // glsl only: vulkan1.2 (default) | vulkan1.3
//     "defines": {"BLOCK": "256"},              // glsl only: preprocessor macros
//     "entry": "main",
//     "bindings": [{"binding": 0, "tensor": "x", "access": "in"},      // access: in | out | inout
//                  {"binding": 1, "tensor": "w", "access": "in", "type": "bf16"},  // element type: f32 (default) | bf16 | f16 | u32 | i32
//                  {"binding": 2, "tensor": "y", "access": "out"}],
//     "push_constants": [{"name": "dim", "type": "u32", "offset": 0, "value": "dim"},
//                        {"name": "eps", "type": "f32", "offset": 4, "value": "eps"}],
//     "push_constant_size": 8,                  // optional: the block's size in bytes, checked
//     "specialization": [{"id": 0, "value": "subgroup_size"}],
//     "dispatch": ["rows", "1", "1"],           // workgroup counts, expressions
//     "limits": ["dim <= 8192", "dim % 4 == 0"],  // a case outside them is skipped, with the reason
//     "accumulation": "f32",                    // precision the kernel accumulates in: f32 | f16 | f64
//     "subgroup_sizes": "any",                  // "driver" (default: not pinned), "any" (every size the device offers) or [32, 64]
//     "differences": [{"when": "any_nan(x)", "why": "..."}],  // failing there: DIFFERS, not FAIL
//     "access_checks": true,                    // false: run without the runner's checks of
//                                               // indices, shifts and shared-memory races
//     "conventions": {"decay_log": "1"}         // the op's convention fields (expressions over
//                                               // the case's params), cases built with them set
//   }]
// }
// Expressions are integer/float arithmetic over the op's params (by their visit() names), the
// device properties (subgroup_size, max_shared_memory, ...), functions (ceil_div, min, max, pow,
// f32, select, fastdiv_l, ... : docs/manifests.md "Expressions"), bitwise operators and the
// constant inf; comparisons, !, && and || for limits. Their syntax is checked at load.
//
// JSON comments are allowed; unknown keys are errors.
//
// What load_manifest guarantees about a returned KernelEntry (so the runner need not re-check):
// the SPIR-V passes spirv-val under the Vulkan rules of its version and has the entry point as
// a GLCompute shader; its descriptors are exactly the declared bindings, all storage buffers in
// set 0, none readonly where the manifest writes or writeonly where it reads; its push-constant
// block has exactly the declared scalar leaves (by path, "pc.dims[1]"; by offset in a module stripped of names) at
// the declared offsets with the declared scalar types, and push_constant_size is the block's
// size; every declared spec id exists and its 32-bit type is recorded; local_size is the entry
// point's declared workgroup size and local_size_spec_id says which dimensions a spec constant
// overrides.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compare/manifest/source_files.h"

namespace moe::compare {

enum class Access { In, Out, InOut };
enum class ElemType { F32, BF16, U32, I32, F16 };
// The manifest's name of a type: "f32" | "bf16" | "u32" | "i32" | "f16".
inline const char* elem_type_name(ElemType t) {
  switch (t) {
    case ElemType::F32: return "f32";
    case ElemType::BF16: return "bf16";
    case ElemType::F16: return "f16";
    case ElemType::U32: return "u32";
    case ElemType::I32: return "i32";
  }
  return "?";
}

// Where a binding's buffer holds an op tensor (docs/manifests.md "Engine layouts"): index
// (i0, i1, ...) of `shape` is tensor element from + sum(ik * tensor_strides[k]) and sits at buffer
// element offset + sum(ik * strides[k]). Every field is an expression; an empty shape means every
// element from `from` on, empty strides mean row-major contiguous over the shape. A pack part
// may instead be one `value`, or values the manifest generates over `shape` (`generate`).
struct ViewSpec {
  std::string tensor;                // the op tensor; "" for a value or generated part
  std::string value;                 // value parts: the expression written into the buffer
  // Generated parts: the expression of every element of `shape`, over the index variables i0,
  // i1, ... (outermost first) and the case's variables (docs/manifests.md "Generated tensors").
  std::string generate;
  ElemType type = ElemType::F32;     // declared type (checked against the tensor's)
  bool type_declared = false;
  std::string from = "0";
  std::vector<std::string> shape, strides, tensor_strides;
  std::string offset = "0";
  std::string becomes;               // in-place: the op output this buffer holds afterwards
  // The tensor's own layout: one contiguous view of all of it at offset 0 (the plain binding).
  bool plain() const {
    return value.empty() && generate.empty() && from == "0" && shape.empty() && strides.empty() && tensor_strides.empty() && offset == "0" &&
           becomes.empty();
  }
};

struct ManifestBinding {
  uint32_t binding = 0;
  // The op tensor of a one-tensor binding; for messages otherwise: "pack(w, gamma)", "scratch",
  // "generate(i0 + past)", "same_as 0 (x)".
  std::string tensor;
  Access access = Access::In;
  ElemType type = ElemType::F32;
  std::vector<ViewSpec> parts;  // one for a tensor binding, several for a pack, none for scratch
  bool pack = false;
  std::string scratch;          // scratch buffers: elements (expression); "" otherwise
  std::string scratch_name;     // a named scratch buffer is shared by the kernels of a sequence
  std::string size;             // buffer elements of `type` (expression); "" = just past the last view
  bool fill_zero = false;       // what no view covers: zeros instead of the poison pattern
  bool uniform = false;         // "descriptor": "uniform": a uniform buffer (parameters), read-only
  // "same_as": N: this descriptor gets binding N's buffer (an engine binding one buffer twice
  // where an optional operand is absent). Resolved to the root of a chain of aliases at load;
  // access, type and tensor are copied from the root, parts stay empty. -1: not an alias.
  int64_t same_as = -1;
  // A one-tensor binding in the tensor's own layout: one buffer per tensor, as the op defines it.
  bool plain() const {
    return same_as < 0 && !pack && scratch.empty() && size.empty() && !fill_zero && !uniform && parts.size() == 1 && parts[0].plain();
  }
};

struct PushConstant {
  std::string name;
  std::string type;   // "u32" | "i32" | "f32"
  uint32_t offset = 0;
  std::string value;  // expression
};

// No spec constant drives this workgroup dimension.
inline constexpr uint32_t kNoSpecId = 0xffffffffu;

struct SpecEntry {
  uint32_t id = 0;
  std::string value;  // expression
  // From reflection: the constant's scalar type, "u32" | "i32" | "f32" | "bool", so the runner
  // knows how to turn the value into the 32 bits it passes (a float constant given the integer
  // bits of 2 would run with 2.8e-45).
  std::string type;
};

// A known, documented difference of a kernel from the op's contract (docs/manifests.md "Declared
// differences"): a case where `when` holds still runs; if it fails, its verdict is DIFFERS (shown
// with `why`), not FAIL.
struct Difference {
  std::string when;  // a limit-like expression; data predicates (all_finite(x), ...) allowed
  std::string why;
};

// A kernel's "conventions" (docs/manifests.md "Conventions"): op convention field -> expression
// over the case's params (compare/cases/conventions.h). Empty: the op's default form.
using Conventions = std::map<std::string, std::string>;

struct KernelEntry {
  std::string name;
  std::vector<std::string> ops;
  std::string source_path;          // absolute path of the .spv or .comp ("/<bundled>/..." for the bundled set)
  bool from_glsl = false;           // source_path is GLSL (compiled at load), not SPIR-V
  // Where source_path and its #includes are read from (the file system, or the bundled tree).
  std::shared_ptr<const SourceFiles> files = file_system();
  std::vector<uint32_t> spirv;      // loaded / compiled / embedded SPIR-V words
  std::string glsl_target = "vulkan1.2";         // glsl only
  std::map<std::string, std::string> defines;    // glsl only
  std::string entry = "main";
  std::vector<ManifestBinding> bindings;
  std::vector<PushConstant> push_constants;
  uint32_t push_constant_size = 0;  // from reflection (a declared "push_constant_size" must equal it)
  std::vector<SpecEntry> specialization;
  std::string dispatch[3] = {"1", "1", "1"};
  std::vector<std::string> limits;
  std::string accumulation = "f32";
  std::vector<uint32_t> subgroup_sizes;  // empty = any
  // "subgroup_sizes": "driver" (a manifest's default): the pipeline is made without a required
  // subgroup size; subgroup_size is then the device's default size. false for "any" or a list
  // (and for entries built in code).
  bool driver_subgroup = false;
  // The runner's undefined-behaviour checks (vk::Dispatch::check_access) in correctness runs.
  // Off only for a kernel meant to misbehave past them (the crash tests of the isolation).
  bool access_checks = true;
  std::vector<Difference> differences;
  Conventions conventions;  // the op's cases are built with these set (a one-op kernel only)
  // Named values ("let"), in an order where each uses only op/device variables and earlier ones.
  std::vector<std::pair<std::string, std::string>> lets;
  // From reflection: the workgroup size the SPIR-V declares (its default, before any
  // specialization), and per dimension the spec constant id that overrides it (kNoSpecId: fixed).
  // The runner computes the real size from the specialization values it passes.
  uint32_t local_size[3] = {1, 1, 1};
  uint32_t local_size_spec_id[3] = {kNoSpecId, kNoSpecId, kNoSpecId};
};

// Several kernels that compute one op together, dispatched in order on the same buffers (a
// split reduction and its final pass: partial argmax per block, then the argmax of the
// partials): "sequences": [{"name": "argmax_two_pass", "op": "argmax", "kernels": ["a", "b"]}].
// Each kernel's "ops" is [op]; the kernels of a sequence are not plans of their own. Named
// scratch buffers ("scratch" with "name") carry what one pass leaves for the next.
struct KernelSequence {
  std::string name, op;
  std::vector<std::string> kernels;
};

struct Manifest {
  std::string name;
  std::string path;  // the JSON file ("" for the bundled set)
  // "mutate_includes": #included files that hold kernel code (absolute paths; docs/manifests.md):
  // `mutate` mutates them too, each mutant judged by every kernel that includes the file.
  std::vector<std::string> mutate_includes;
  std::vector<KernelEntry> kernels;
  std::vector<KernelSequence> sequences;
  // The sequence kernel `k` belongs to, or nullptr.
  const KernelSequence* sequence_of(const std::string& kernel) const;
  const KernelEntry* find_op(const std::string& op) const;  // first kernel whose ops == {op}
};

// Variables for expressions: op params and device properties by name.
using ExprVars = std::map<std::string, double>;
// The kernel's "let" values added to `vars` (each evaluated over the op/device variables and the
// lets before it); a name that shadows a variable throws moe::Error naming `where` and the kernel.
ExprVars with_lets(const KernelEntry& k, const ExprVars& vars, const std::string& where);
// Data predicates (docs/manifests.md "Declared differences"): all_finite(t), any_nan(t),
// any_inf(t), max_abs(t) over the case's input tensor t. The harness computes them per case and
// passes each as the variable data_predicate_var(predicate, t), "max_abs(x)".
bool is_data_predicate(const std::string& name);
std::string data_predicate_var(const std::string& predicate, const std::string& tensor);
// The names an expression reads (for ordering "let"s at load).
std::vector<std::string> expr_names(const std::string& expr);

// Evaluates an expression; throws moe::Error naming the expression and the unknown variable or
// syntax error. Integer semantics where both sides are integral (/ truncates like C).
double eval_expr(const std::string& expr, const ExprVars& vars);
// Syntax only (any name is accepted, no arithmetic errors): load_manifest uses it so a malformed
// expression fails at load, naming the kernel and field, not in the middle of a run.
void check_expr(const std::string& expr);
// How messages show a value: integers exactly, others in the shortest round-trip text.
std::string format_value(double v);
// A limit: true when it holds; `why` receives "dim <= 8192 (dim = 16384)" when it does not.
bool eval_limit(const std::string& expr, const ExprVars& vars, std::string* why);

// One kernel made concrete for one case: what the runner passes to vk::Dispatch.
struct KernelInstance {
  std::string skipped;                   // non-empty: a limit does not hold, with the values ("dim <= 8192 (dim = 16384)")
  std::vector<uint8_t> push_constants;   // push_constant_size bytes, each member at its offset
  std::vector<std::pair<uint32_t, uint32_t>> spec_constants;  // (id, raw 32 bits in the constant's type)
  uint32_t groups[3] = {1, 1, 1};        // workgroup counts from "dispatch"
  uint32_t local_size[3] = {1, 1, 1};    // the workgroup size after specialization
  ExprVars vars;                         // the variables it was made with, the kernel's lets added
};
// The raw 32 bits of `v` as `type` ("u32" | "i32" | "f32" | "bool"): a value that does not fit
// (negative or fractional u32, i32 beyond 2^31, non-finite or overflowing f32, bool other than
// 0/1) throws moe::Error "<what> = <v> does not fit ...". f32 rounds to nearest.
uint32_t to_bits(double v, const std::string& type, const std::string& what);
// Evaluates a loaded entry's limits (in order; the first that fails skips the case and nothing
// else is evaluated, since dispatch expressions may be meaningless outside the limits), then its
// push constants, spec constants and dispatch over `vars`. A value that does not fit its type
// (a negative or fractional u32, an i32 beyond 2^31, a non-finite or out-of-range f32, a bool
// other than 0/1) or a workgroup count outside [1, 2^32) throws moe::Error naming `where`, the
// kernel, the field and the value: wrapping it silently would run another case than the one
// compared.
KernelInstance instantiate(const KernelEntry& k, const ExprVars& vars, const std::string& where);

// Loads and validates a manifest file: JSON structure, the SPIR-V (read, or compiled from GLSL
// with shaderc), then every entry against the SPIR-V's reflection (spirv-cross C API): binding
// numbers exist and are storage buffers in set 0, push-constant block size and member offsets
// match, spec constant ids exist, workgroup size read. Any mismatch throws moe::Error naming the
// file, the kernel, the binding/member and both sides.
// `only` (optional): load, compile and check just the kernels of these names. `files`: where the
// manifest and its kernels are read from (the bundled set: from memory). `kernels_root`: the
// engine checkout that a manifest declaring "sources": "kernels_root" names its shaders in
// (an engine's manifest shipped here, its shaders in the user's checkout); it must be given for
// such a manifest and empty for any other.
Manifest load_manifest(const std::string& path, const std::set<std::string>* only = nullptr,
                       const std::shared_ptr<const SourceFiles>& files = file_system(),
                       const std::string& kernels_root = "");
// Validates one entry against its SPIR-V (used by load_manifest and for the bundled set) and
// fills push_constant_size, each spec constant's type, local_size and local_size_spec_id. `where` prefixes every message
// (the manifest file); messages then name the kernel.
void reflect_and_check(KernelEntry& k, const std::string& where);
// SPIRV-Tools' validator under the Vulkan rules of the module's SPIR-V version (scalar and relaxed
// block layouts allowed); throws moe::Error starting with `where` and listing the messages.
void validate_spirv(const std::vector<uint32_t>& words, const std::string& where);

// Compiles GLSL compute source with shaderc for k.glsl_target with k.defines; #include "..."
// resolves relative to the including file, in k.files. `path` names the source in messages and includes.
// No optimization, so member names (push constants are matched by name) survive.
// `optimize`: spirv-opt's performance passes (names stripped): for telling equivalent modules
// apart (mutate), never for loading a manifest. `cached`: through the compiled-GLSL cache shared
// by processes (spirv_cache.h): for kernels every worker loads, not for one-off mutants.
std::vector<uint32_t> compile_glsl(const std::string& source, const std::string& path, const KernelEntry& k,
                                   bool optimize = false, bool cached = false);
// The files a kernel's GLSL #includes (absolute, lexically normal paths in k.files), under its
// defines: what a mutant of an included file can change (mutate).
std::set<std::string> glsl_includes(const std::string& source, const std::string& path, const KernelEntry& k);
// Reads a .spv file: non-empty, size a multiple of 4, SPIR-V magic 0x07230203 (a byte-swapped
// magic is reported as such).
std::vector<uint32_t> read_spirv(const std::string& path, const SourceFiles& files = *file_system());

}  // namespace moe::compare
