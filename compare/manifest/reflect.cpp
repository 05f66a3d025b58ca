// reflect_and_check (manifest.h): a manifest entry against its SPIR-V's reflection, through
// spirv-cross's C API. The point is that a wrong manifest fails here, with both sides named,
// instead of producing a plausible-looking wrong comparison later: a binding off by one would
// feed the weight where the input belongs, a push constant at the wrong offset would run the
// kernel on a different shape. Every resource the shader declares is considered (not only the
// ones the entry point uses), so an unused-but-declared binding must be declared too: the
// manifest then describes the module exactly.
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spirv-tools/libspirv.hpp>
#include <spirv_cross/spirv_cross_c.h>

#include "compare/manifest/manifest.h"
#include "core/check.h"

namespace moe::compare {
namespace {

const char* model_name(SpvExecutionModel m) {
  switch (m) {
    case SpvExecutionModelVertex: return "vertex";
    case SpvExecutionModelTessellationControl: return "tessellation control";
    case SpvExecutionModelTessellationEvaluation: return "tessellation evaluation";
    case SpvExecutionModelGeometry: return "geometry";
    case SpvExecutionModelFragment: return "fragment";
    case SpvExecutionModelGLCompute: return "compute";
    case SpvExecutionModelKernel: return "OpenCL kernel";
    default: return "non-compute";
  }
}

const char* scalar_name(spvc_basetype t) {
  switch (t) {
    case SPVC_BASETYPE_UINT32: return "u32";
    case SPVC_BASETYPE_INT32: return "i32";
    case SPVC_BASETYPE_FP32: return "f32";
    case SPVC_BASETYPE_FP16: return "f16";
    case SPVC_BASETYPE_FP64: return "f64";
    case SPVC_BASETYPE_INT64: return "i64";
    case SPVC_BASETYPE_UINT64: return "u64";
    case SPVC_BASETYPE_INT16: return "i16";
    case SPVC_BASETYPE_UINT16: return "u16";
    case SPVC_BASETYPE_INT8: return "i8";
    case SPVC_BASETYPE_UINT8: return "u8";
    case SPVC_BASETYPE_BOOLEAN: return "bool";
    case SPVC_BASETYPE_STRUCT: return "struct";
    default: return "other";
  }
}

// Resource kinds that occupy a descriptor binding, with their names for messages.
struct DescriptorKind {
  spvc_resource_type type;
  const char* name;
};
constexpr DescriptorKind kDescriptorKinds[] = {
    {SPVC_RESOURCE_TYPE_STORAGE_BUFFER, "storage buffer"},
    {SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, "uniform buffer"},
    {SPVC_RESOURCE_TYPE_STORAGE_IMAGE, "storage image"},
    {SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, "sampled image"},
    {SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, "separate image"},
    {SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS, "sampler"},
    {SPVC_RESOURCE_TYPE_SUBPASS_INPUT, "subpass input"},
    {SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE, "acceleration structure"},
    {SPVC_RESOURCE_TYPE_ATOMIC_COUNTER, "atomic counter"},
};

// Owns the spirv-cross context (which owns every object and string it hands out) and keeps the
// last error text for messages.
class Reflection {
 public:
  Reflection(const std::vector<uint32_t>& words, const std::string& where) : where_(where) {
    MOE_CHECK(spvc_context_create(&ctx_) == SPVC_SUCCESS, where_ << ": spirv-cross context could not be created");
    spvc_context_set_error_callback(
        ctx_, [](void* self, const char* e) { static_cast<Reflection*>(self)->last_error_ = e; }, this);
    spvc_parsed_ir ir = nullptr;
    MOE_CHECK(spvc_context_parse_spirv(ctx_, words.data(), words.size(), &ir) == SPVC_SUCCESS,
              where_ << ": SPIR-V could not be parsed: " << last_error_);
    MOE_CHECK(spvc_context_create_compiler(ctx_, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &comp_) ==
                  SPVC_SUCCESS,
              where_ << ": SPIR-V could not be reflected: " << last_error_);
  }
  ~Reflection() { spvc_context_destroy(ctx_); }
  Reflection(const Reflection&) = delete;
  Reflection& operator=(const Reflection&) = delete;

  spvc_compiler comp() const { return comp_; }
  void ok(spvc_result r, const char* what) const {
    MOE_CHECK(r == SPVC_SUCCESS, where_ << ": spirv-cross failed to " << what << ": " << last_error_);
  }
  std::vector<spvc_reflected_resource> list(spvc_resources res, spvc_resource_type t) const {
    const spvc_reflected_resource* p = nullptr;
    size_t n = 0;
    ok(spvc_resources_get_resource_list_for_type(res, t, &p, &n), "list resources");
    return {p, p + n};
  }

 private:
  std::string where_;
  std::string last_error_ = "(no detail)";
  spvc_context ctx_ = nullptr;
  spvc_compiler comp_ = nullptr;
};

void check_entry(const Reflection& r, KernelEntry& k, const std::string& where) {
  const spvc_entry_point* eps = nullptr;
  size_t n = 0;
  r.ok(spvc_compiler_get_entry_points(r.comp(), &eps, &n), "list entry points");
  std::string found;
  for (size_t i = 0; i < n; ++i) {
    if (k.entry == eps[i].name && eps[i].execution_model == SpvExecutionModelGLCompute) {
      r.ok(spvc_compiler_set_entry_point(r.comp(), eps[i].name, SpvExecutionModelGLCompute), "select the entry point");
      return;
    }
    found += std::string(found.empty() ? "" : ", ") + "'" + eps[i].name + "' (" + model_name(eps[i].execution_model) + ")";
  }
  for (size_t i = 0; i < n; ++i)
    MOE_CHECK(k.entry != eps[i].name, where << ": entry point '" << k.entry << "' is a " << model_name(eps[i].execution_model)
                                            << " shader, expected a compute shader");
  MOE_FAIL(where << ": entry: the manifest names entry point '" << k.entry << "', the SPIR-V has "
                 << (found.empty() ? "none" : found));
}

void check_bindings(const Reflection& r, spvc_resources res, const KernelEntry& k, const std::string& where) {
  spvc_compiler c = r.comp();
  std::vector<bool> seen(k.bindings.size(), false);
  // Per buffer (a binding and its "same_as" aliases): whether some descriptor reaching it may
  // read it, may write it, and which descriptors those are (for messages).
  struct BufferUse {
    bool readable = false, writable = false;
    std::vector<std::string> read_only, write_only;  // the readonly / writeonly descriptors
  };
  const auto all = [](const std::vector<std::string>& sides, const char* what) {
    std::string s;
    for (const std::string& side : sides) s += (s.empty() ? "" : " and ") + side;
    return s + (sides.size() > 1 ? " are all " : " is ") + what;
  };
  std::map<uint32_t, BufferUse> use;  // root binding number ->
  auto declared = [&](uint32_t binding) -> int {
    for (size_t i = 0; i < k.bindings.size(); ++i)
      if (k.bindings[i].binding == binding) return static_cast<int>(i);
    return -1;
  };
  for (const DescriptorKind& kind : kDescriptorKinds) {
    for (const auto& v : r.list(res, kind.type)) {
      // Vulkan requires both decorations on every descriptor (spirv-cross would read 0 otherwise).
      MOE_CHECK(spvc_compiler_has_decoration(c, v.id, SpvDecorationBinding) &&
                    spvc_compiler_has_decoration(c, v.id, SpvDecorationDescriptorSet),
                where << ": the shader's " << kind.name << " '" << v.name << "' has no Binding/DescriptorSet decoration");
      uint32_t set = spvc_compiler_get_decoration(c, v.id, SpvDecorationDescriptorSet);
      uint32_t binding = spvc_compiler_get_decoration(c, v.id, SpvDecorationBinding);
      std::string shader_side = std::string("the shader's ") + kind.name + " '" + v.name + "' (set " + std::to_string(set) +
                                ", binding " + std::to_string(binding) + ")";
      int d = declared(binding);
      std::string manifest_side =
          d < 0 ? "" : "the manifest's binding " + std::to_string(binding) + " (tensor \"" + k.bindings[d].tensor + "\")";
      // The runner binds one descriptor set with storage buffers only (runner.h: "descriptor
      // set 0, storage buffers"); anything else cannot be fed.
      // A binding the manifest declares "descriptor": "uniform" must be a uniform buffer.
      const bool want_uniform = d >= 0 && k.bindings[d].uniform;
      const spvc_resource_type want = want_uniform ? SPVC_RESOURCE_TYPE_UNIFORM_BUFFER : SPVC_RESOURCE_TYPE_STORAGE_BUFFER;
      MOE_CHECK(kind.type == want,
                where << ": " << shader_side << " is not a " << (want_uniform ? "uniform" : "storage") << " buffer"
                      << (d < 0 ? "; only storage and uniform buffers in set 0 can be bound"
                                : "; " + manifest_side + " expects one" +
                                      (kind.type == SPVC_RESOURCE_TYPE_UNIFORM_BUFFER ? " (declare \"descriptor\": \"uniform\")" : "")));
      MOE_CHECK(set == 0, where << ": " << shader_side << " is in set " << set << ", expected set 0"
                                << (d < 0 ? "" : " for " + manifest_side));
      MOE_CHECK(d >= 0, where << ": " << shader_side << " is not declared in the manifest (declared bindings: "
                              << [&] {
                                   std::string s;
                                   for (const auto& b : k.bindings)
                                     s += (s.empty() ? "" : ", ") + std::to_string(b.binding) + " \"" + b.tensor + "\"";
                                   return s;
                                 }()
                              << ")");
      // Several storage buffers may alias one binding (engines view one buffer as float and as
      // packed uint; Vulkan allows it): one declared binding covers them all, and each alias
      // must agree with its access below.
      seen[d] = true;
      spvc_type t = spvc_compiler_get_type_handle(c, v.type_id);
      MOE_CHECK(spvc_type_get_num_array_dimensions(t) == 0,
                where << ": " << shader_side << " is an array of buffers; " << manifest_side << " binds one buffer");
      // Access: a buffer the shader declares readonly cannot be an output, and a writeonly one
      // cannot be an input; either way the manifest has the roles of the tensors wrong.
      const SpvDecoration* decs = nullptr;
      size_t nd = 0;
      r.ok(spvc_compiler_get_buffer_block_decorations(c, v.id, &decs, &nd), "read buffer decorations");
      bool readonly = false, writeonly = false;
      for (size_t i = 0; i < nd; ++i) {
        readonly |= decs[i] == SpvDecorationNonWritable;
        writeonly |= decs[i] == SpvDecorationNonReadable;
      }
      Access a = k.bindings[d].access;
      const bool alias = k.bindings[d].same_as >= 0;
      BufferUse& u = use[alias ? uint32_t(k.bindings[d].same_as) : binding];
      u.readable |= !writeonly, u.writable |= !readonly;
      if (readonly) u.read_only.push_back(shader_side);
      if (writeonly) u.write_only.push_back(shader_side);
      if (alias)  // an alias may read any buffer, write only a written one
        MOE_CHECK(readonly || a != Access::In,
                  where << ": " << manifest_side << " aliases binding " << k.bindings[d].same_as
                        << ", an \"in\" buffer, but " << shader_side
                        << " is writable (declare it readonly, or make the aliased binding \"inout\")");
    }
  }
  // A buffer's access is what the descriptors reaching it can do together: an engine may read a
  // buffer through a readonly binding and write it through a writeonly alias (an in-place add).
  for (const ManifestBinding& b : k.bindings) {
    if (b.same_as >= 0 || !use.count(b.binding)) continue;
    const BufferUse& u = use[b.binding];
    const std::string manifest_side = "the manifest's binding " + std::to_string(b.binding) + " (tensor \"" + b.tensor + "\")";
    MOE_CHECK(u.writable || b.access == Access::In, where << ": " << manifest_side << " has access \""
                                                          << (b.access == Access::Out ? "out" : "inout") << "\", but "
                                                          << all(u.read_only, "readonly"));
    MOE_CHECK(u.readable || b.access == Access::Out, where << ": " << manifest_side << " has access \""
                                                           << (b.access == Access::In ? "in" : "inout") << "\", but "
                                                           << all(u.write_only, "writeonly"));
  }
  for (size_t i = 0; i < k.bindings.size(); ++i)
    MOE_CHECK(seen[i], where << ": bindings[" << i << "]: the manifest's binding " << k.bindings[i].binding << " (tensor \""
                             << k.bindings[i].tensor << "\") is not a storage buffer in the shader (no resource has binding "
                             << k.bindings[i].binding << ")");
}

// One scalar of a push-constant block: nested structs, arrays and vectors are flattened to their
// scalars, each named by its path in the shader's syntax ("pc.rope_mode", "pc.corr_dims[1]",
// "dims.x"), so a manifest declares exactly the values the kernel reads.
struct PcLeaf {
  std::string name;  // the path; "" when the module has no member names
  std::string type;  // scalar_name()
  uint32_t offset = 0;
  bool named = false;
};

constexpr size_t kMaxPcLeaves = 1024;  // 4096 bytes of 32-bit scalars: far above any real block

void add_leaf(const Reflection& r, spvc_type t, const std::string& path, uint32_t offset, int depth, bool named,
              std::vector<PcLeaf>& out, const std::string& where);

// Appends the leaves of struct `struct_id`'s members at byte `base`, paths prefixed by `prefix`.
void collect_leaves(const Reflection& r, spvc_type_id struct_id, const std::string& prefix, uint32_t base, int depth,
                    std::vector<PcLeaf>& out, const std::string& where) {
  spvc_compiler c = r.comp();
  MOE_CHECK(depth < 16, where << ": the push-constant block nests structs deeper than 16 levels");
  spvc_type st = spvc_compiler_get_type_handle(c, struct_id);
  const unsigned n = spvc_type_get_num_member_types(st);
  for (unsigned i = 0; i < n; ++i) {
    const std::string name = spvc_compiler_get_member_name(c, struct_id, i);
    uint32_t offset = 0;
    r.ok(spvc_compiler_type_struct_member_offset(c, st, i, &offset), "read a push-constant member offset");
    const spvc_type_id mid = spvc_type_get_member_type(st, i);
    spvc_type mt = spvc_compiler_get_type_handle(c, mid);
    const std::string path = prefix + (name.empty() ? "<unnamed>" : name);
    // Arrays: every element, outermost index first; spirv-cross lists dimensions innermost first,
    // and the member's ArrayStride is the outermost one's (each inner stride divides it evenly).
    std::vector<uint32_t> dims;
    const unsigned nd = spvc_type_get_num_array_dimensions(mt);
    for (unsigned d = nd; d-- > 0;) {
      MOE_CHECK(spvc_type_array_dimension_is_literal(mt, d),
                where << ": push-constant member \"" << path << "\" is an array sized by a specialization constant");
      dims.push_back(spvc_type_get_array_dimension(mt, d));
    }
    uint32_t stride = 0;
    if (nd > 0) r.ok(spvc_compiler_type_struct_member_array_stride(c, st, i, &stride), "read a push-constant array stride");
    size_t count = 1;
    for (uint32_t d : dims) count *= d;
    MOE_CHECK(count <= kMaxPcLeaves, where << ": push-constant member \"" << path << "\" has " << count << " elements");
    for (size_t e = 0; e < count; ++e) {
      std::string epath = path;
      uint32_t eoff = base + offset, s = stride;
      size_t rest = e, span = count;
      for (size_t k = 0; k < dims.size(); ++k) {  // outermost first
        if (k > 0) s /= dims[k];                   // an array's stride times its length is the outer stride
        span /= dims[k];
        const size_t idx = rest / span;
        rest %= span;
        epath += "[" + std::to_string(idx) + "]";
        eoff += static_cast<uint32_t>(idx) * s;
      }
      add_leaf(r, mt, epath, eoff, depth, !name.empty(), out, where);
      MOE_CHECK(out.size() <= kMaxPcLeaves, where << ": the push-constant block has more than " << kMaxPcLeaves << " scalars");
    }
  }
}

// One (non-array) value of type `t` at `offset`: a scalar, a vector's components, or a struct's leaves.
void add_leaf(const Reflection& r, spvc_type t, const std::string& path, uint32_t offset, int depth,
              bool named, std::vector<PcLeaf>& out, const std::string& where) {
  const spvc_basetype bt = spvc_type_get_basetype(t);
  if (bt == SPVC_BASETYPE_STRUCT) {
    collect_leaves(r, spvc_type_get_base_type_id(t), path + ".", offset, depth + 1, out, where);
    return;
  }
  MOE_CHECK(spvc_type_get_columns(t) <= 1, where << ": push-constant member \"" << path
                                                 << "\" is a matrix; only scalars, vectors, arrays and structs of them "
                                                    "can be declared");
  const unsigned vec = spvc_type_get_vector_size(t);
  const uint32_t bytes = spvc_type_get_bit_width(t) / 8;
  static const char* comp[] = {"x", "y", "z", "w"};
  for (unsigned v = 0; v < vec; ++v)
    out.push_back({named ? path + (vec > 1 ? std::string(".") + comp[v] : "") : "", scalar_name(bt), offset + v * bytes, named});
}

void check_push_constants(const Reflection& r, spvc_resources res, KernelEntry& k, const std::string& where) {
  spvc_compiler c = r.comp();
  auto blocks = r.list(res, SPVC_RESOURCE_TYPE_PUSH_CONSTANT);
  // SPIR-V allows one push-constant block per entry point.
  MOE_CHECK(blocks.size() <= 1, where << ": the SPIR-V has " << blocks.size() << " push-constant blocks, expected at most 1");
  if (blocks.empty()) {
    k.push_constant_size = 0;
    MOE_CHECK(k.push_constants.empty(), where << ": push_constants: the manifest declares " << k.push_constants.size()
                                              << " (first \"" << k.push_constants[0].name
                                              << "\"), the shader has no push-constant block");
    return;
  }
  spvc_type block = spvc_compiler_get_type_handle(c, blocks[0].base_type_id);
  size_t size = 0;
  r.ok(spvc_compiler_get_declared_struct_size(c, block, &size), "size the push-constant block");
  k.push_constant_size = static_cast<uint32_t>(size);

  std::vector<PcLeaf> members;
  collect_leaves(r, blocks[0].base_type_id, "", 0, 0, members, where);
  std::string listing;
  for (const auto& m : members)
    listing += (listing.empty() ? "" : ", ") + (m.name.empty() ? "<unnamed>" : m.name) + " " + m.type + " @" +
               std::to_string(m.offset);
  std::string block_desc = "the shader's push-constant block (" + std::to_string(size) + " bytes: " + listing + ")";
  MOE_CHECK(!k.push_constants.empty(), where << ": push_constants: the manifest declares none, but " << block_desc
                                             << " must be filled");
  // Members are matched by name. A module without member names (spirv-opt strips them, and
  // engines ship optimized .spv) is matched by offset instead: the manifest's names are then
  // labels, and offsets and types are still checked both ways.
  bool by_name = false;
  for (const auto& m : members) by_name |= m.named;
  auto same = [&](const PushConstant& p, const PcLeaf& m) { return by_name ? m.name == p.name : m.offset == p.offset; };
  for (size_t i = 0; i < k.push_constants.size(); ++i) {
    const PushConstant& p = k.push_constants[i];
    const PcLeaf* m = nullptr;
    for (const auto& x : members)
      if (same(p, x)) m = &x;
    // A member inside a struct or array is named by its path: "rope_mode" may mean "pc.rope_mode".
    std::string hint;
    for (const auto& x : members)
      if (by_name && x.name.size() > p.name.size() && x.name.ends_with("." + p.name)) hint = "; did you mean \"" + x.name + "\"?";
    MOE_CHECK(m, where << ": push_constants[" << i << "] \"" << p.name << "\" "
                       << (by_name ? "is not a member of "
                                   : "(offset " + std::to_string(p.offset) + ") has no member at its offset in ")
                       << block_desc << (by_name ? hint : "; the SPIR-V has no member names, so members match by offset"));
    MOE_CHECK(m->offset == p.offset, where << ": push constant \"" << p.name << "\": manifest offset " << p.offset
                                           << ", shader offset " << m->offset << " in " << block_desc);
    MOE_CHECK(m->type == p.type, where << ": push constant \"" << p.name << "\": manifest type " << p.type
                                       << ", shader type " << m->type << " in " << block_desc);
  }
  // A member nobody fills would run with 0 and look like a kernel bug; it must be declared
  // (with value "0" when really unused).
  // Every missing one is listed (a struct's leaves tend to be forgotten together).
  std::string missing;
  size_t n_missing = 0;
  for (const auto& m : members) {
    bool declared = false;
    for (const auto& p : k.push_constants) declared |= same(p, m);
    if (declared) continue;
    ++n_missing;
    missing += std::string(missing.empty() ? "" : ", ") + (m.name.empty() ? "<unnamed>" : "\"" + m.name + "\"") + " (" +
               m.type + " @" + std::to_string(m.offset) + ")";
  }
  MOE_CHECK(n_missing == 0, where << ": push constant member" << (n_missing > 1 ? "s " : " ") << missing << " of "
                                  << block_desc << (n_missing > 1 ? " are" : " is")
                                  << " not declared in the manifest (declare it, value \"0\" if unused)");
}

void check_spec_and_workgroup(const Reflection& r, KernelEntry& k, const std::string& where) {
  spvc_compiler c = r.comp();
  const spvc_specialization_constant* sc = nullptr;
  size_t n = 0;
  r.ok(spvc_compiler_get_specialization_constants(c, &sc, &n), "list specialization constants");
  std::string ids;
  for (size_t i = 0; i < n; ++i) ids += (ids.empty() ? "" : ", ") + std::to_string(sc[i].constant_id);
  for (size_t i = 0; i < k.specialization.size(); ++i) {
    SpecEntry& e = k.specialization[i];
    const spvc_specialization_constant* found = nullptr;
    for (size_t j = 0; j < n; ++j)
      if (sc[j].constant_id == e.id) found = &sc[j];
    MOE_CHECK(found, where << ": specialization[" << i << "]: the manifest sets spec constant id " << e.id
                           << ", the shader's spec constant ids are " << (ids.empty() ? "none" : "{" + ids + "}"));
    spvc_constant cst = spvc_compiler_get_constant_handle(c, found->id);
    spvc_type t = spvc_compiler_get_type_handle(c, spvc_constant_get_type(cst));
    spvc_basetype bt = spvc_type_get_basetype(t);
    // Vulkan passes each spec constant as its own size (VkSpecializationMapEntry::size); the
    // runner passes 32 bits, which covers u32, i32, f32 and bool (VkBool32).
    MOE_CHECK(bt == SPVC_BASETYPE_UINT32 || bt == SPVC_BASETYPE_INT32 || bt == SPVC_BASETYPE_FP32 ||
                  bt == SPVC_BASETYPE_BOOLEAN,
              where << ": specialization[" << i << "]: spec constant id " << e.id << " is " << scalar_name(bt)
                    << " in the shader; only 32-bit u32, i32, f32 and bool spec constants are supported");
    e.type = scalar_name(bt);
  }

  // The workgroup size: the LocalSize literals, or LocalSizeId constants (SPIR-V 1.6 / Vulkan
  // 1.3 glslang output), each possibly a spec constant (local_size_x_id) whose default we read.
  spvc_specialization_constant wg[3] = {};
  spvc_compiler_get_work_group_size_specialization_constants(c, &wg[0], &wg[1], &wg[2]);
  const SpvExecutionMode* modes = nullptr;
  size_t nm = 0;
  r.ok(spvc_compiler_get_execution_modes(c, &modes, &nm), "list execution modes");
  bool literal = false, by_id = false;
  for (size_t i = 0; i < nm; ++i) {
    literal |= modes[i] == SpvExecutionModeLocalSize;
    by_id |= modes[i] == SpvExecutionModeLocalSizeId;
  }
  for (unsigned d = 0; d < 3; ++d) {
    k.local_size_spec_id[d] = kNoSpecId;
    if (wg[d].id != 0) {
      k.local_size_spec_id[d] = wg[d].constant_id;
      spvc_constant cst = spvc_compiler_get_constant_handle(c, wg[d].id);
      MOE_CHECK(cst, where << ": workgroup size dimension " << d << ": spec constant not readable");
      k.local_size[d] = spvc_constant_get_scalar_u32(cst, 0, 0);
    } else if (literal) {
      k.local_size[d] = spvc_compiler_get_execution_mode_argument_by_index(c, SpvExecutionModeLocalSize, d);
    } else if (by_id) {
      uint32_t id = spvc_compiler_get_execution_mode_argument_by_index(c, SpvExecutionModeLocalSizeId, d);
      spvc_constant cst = spvc_compiler_get_constant_handle(c, id);
      MOE_CHECK(cst, where << ": workgroup size dimension " << d << ": LocalSizeId constant not readable");
      k.local_size[d] = spvc_constant_get_scalar_u32(cst, 0, 0);
    } else {
      // A WorkgroupSize builtin without a spec id is covered by wg[]; with neither, the module
      // is invalid for Vulkan.
      MOE_FAIL(where << ": the compute entry point '" << k.entry << "' declares no workgroup size");
    }
    MOE_CHECK(k.local_size[d] >= 1, where << ": workgroup size dimension " << d << " is 0");
  }
}


}  // namespace

// SPIRV-Tools' validator under the Vulkan rules for the module's SPIR-V version: a malformed
// module must be an error here, not a crash in spirv-cross or in the driver. Scalar block layout
// is allowed (engines use GL_EXT_scalar_block_layout; the device feature is the runner's
// concern), as is relaxed block layout (core since Vulkan 1.1).
void validate_spirv(const std::vector<uint32_t>& words, const std::string& where) {
  uint32_t version = words.size() > 1 ? words[1] : 0;
  // SPIR-V 1.6 is Vulkan 1.3's; every earlier version is accepted by the Vulkan 1.2 rules.
  spv_target_env env = version >= 0x00010600u ? SPV_ENV_VULKAN_1_3 : SPV_ENV_VULKAN_1_2;
  spvtools::SpirvTools tools(env);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
    messages += "\n  word " + std::to_string(pos.index) + ": " + msg;
  });
  spvtools::ValidatorOptions opt;
  opt.SetRelaxBlockLayout(true);
  opt.SetScalarBlockLayout(true);
  opt.SetWorkgroupScalarBlockLayout(true);
  MOE_CHECK(tools.Validate(words.data(), words.size(), opt),
            where << ": invalid SPIR-V (spirv-val, " << (env == SPV_ENV_VULKAN_1_3 ? "Vulkan 1.3" : "Vulkan 1.2")
                  << " rules):" << messages);
}

void reflect_and_check(KernelEntry& k, const std::string& where_in) {
  std::string where = where_in + " '" + k.name + "'";
  MOE_CHECK(!k.spirv.empty(), where << ": no SPIR-V");
  validate_spirv(k.spirv, where);
  Reflection r(k.spirv, where);
  check_entry(r, k, where);
  spvc_resources res = nullptr;
  r.ok(spvc_compiler_create_shader_resources(r.comp(), &res), "reflect resources");
  check_bindings(r, res, k, where);
  check_push_constants(r, res, k, where);
  check_spec_and_workgroup(r, k, where);
}

}  // namespace moe::compare
