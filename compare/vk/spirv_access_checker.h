#pragma once
// The access checker (check_access, runner_internal.h): its module facts, index, shift and
// shuffle guards, shared-memory shadows, and the module's reassembly. The checks at each shared
// access are in spirv_access_shared.cpp, the uninitialised locals in spirv_access_locals.cpp.
// Out-of-range accesses made visible (see runner_internal.h, check_access). Undefined behaviour
// that a driver happens to make harmless cannot be seen in a kernel's outputs: lavapipe drops a
// write one past a private array and masks a shift by 32 to 0; a GPU may corrupt a neighbouring
// variable, fault, or return anything. Here every dynamic index into an array, a runtime array of
// a storage buffer (against the binding's usable size, without the guard), a vector or a matrix,
// every shift amount and every subgroup shuffle's lane id or xor mask, is compared with its limit
// before the access; a violation records its
// site in a Private variable, clamps the index to 0 (so the checked run itself stays defined),
// and the entry point's returns publish the site with an atomic max into an extra storage buffer
// the runner binds and reads after the dispatch. In-range accesses compute exactly what they did.
// Shadows of shared memory (races, uninitialised elements) and of locals declared without an
// initializer (uninitialised reads) record their sites the same way.
#ifndef SPV_ENABLE_UTILITY_CODE
#define SPV_ENABLE_UTILITY_CODE  // spv::HasResultAndType
#endif
#include <spirv/unified1/spirv.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "compare/vk/runner_internal.h"
#include "core/check.h"

namespace moe::vk::detail {

class Checker {
 public:
  Checker(std::span<const uint32_t> w, const std::string& label, const std::string& entry, const AccessLimits& lim)
      : w_(w), label_(label), entry_(entry), bound_(w[3]), lim_(lim) {}

  AccessCheck run() {
    parse();
    AccessCheck res;
    if (entry_fn_ == 0) return res;  // no such entry point: the runner reports that itself
    uint32_t used = lim_.min_binding;
    for (const auto& [var, b] : binding_) used = std::max(used, b + 1);
    check_binding_ = used;
    prepare_globals();
    prepare_races();
    prepare_global_races();
    find_fully_seen();
    prepare_locals();
    std::vector<uint32_t> body = instrument_functions();
    if (sites_.empty()) return res;
    MOE_CHECK(sites_.size() < kAccessSiteRank, "vulkan: " << label_ << ": " << sites_.size() << " checked sites, at most "
                                                           << kAccessSiteRank - 1 << " can be told apart");
    res.binding = check_binding_;
    res.sites = sites_;
    res.lengths = lengths_;
    res.words = assemble(body);
    return res;
  }

 private:
  struct Type {
    uint32_t op = 0;
    std::vector<uint32_t> a;  // operands after the result id
  };

  // ---- the module's global facts --------------------------------------------------------------
  void parse() {
    for (size_t i = 5; i < w_.size();) {
      const uint32_t count = w_[i] >> 16, op = w_[i] & 0xFFFFu;
      MOE_CHECK(count > 0 && i + count <= w_.size(), "vulkan: " << label_ << ": malformed SPIR-V at word " << i);
      const uint32_t* a = &w_[i + 1];
      if (op == spv::OpFunction && first_function_ == 0) first_function_ = i;
      if (first_annotation_ == 0 && (op == spv::OpDecorate || op == spv::OpMemberDecorate ||
                                     op == spv::OpDecorationGroup || is_global_decl(op)))
        first_annotation_ = i;
      bool has_result = false, has_type = false;
      spv::HasResultAndType(spv::Op(op), &has_result, &has_type);
      if (has_result && has_type && count >= 3) result_type_[a[1]] = a[0];
      if (op == spv::OpEntryPoint && count >= 4 && a[0] == spv::ExecutionModelGLCompute &&
          std::string(reinterpret_cast<const char*>(&a[2])) == entry_) {
        entry_fn_ = a[1], entry_at_ = i;
        const size_t name_words = std::string(reinterpret_cast<const char*>(&a[2])).size() / 4 + 1;
        interface_.assign(a + 2 + name_words, a + count - 1);
      }
      else if (op == spv::OpName && count >= 3)
        name_[a[0]] = std::string(reinterpret_cast<const char*>(&a[1]));
      else if (op == spv::OpMemberName && count >= 4)
        member_name_[{a[0], a[1]}] = std::string(reinterpret_cast<const char*>(&a[2]));
      else if (op == spv::OpDecorate && count >= 4 && a[1] == spv::DecorationBinding)
        binding_[a[0]] = a[2];
      else if (op == spv::OpDecorate && count >= 4 && a[1] == spv::DecorationDescriptorSet)
        set_[a[0]] = a[2];
      else if (op == spv::OpDecorate && count >= 4 && a[1] == spv::DecorationArrayStride)
        stride_[a[0]] = a[2];
      else if (op == spv::OpMemberDecorate && count >= 5 && a[2] == spv::DecorationOffset)
        offset_[{a[0], a[1]}] = a[3];
      else if (op >= spv::OpTypeVoid && op <= spv::OpTypeForwardPointer && count >= 2)
        type_[a[0]] = {op, std::vector<uint32_t>(a + 1, a + count - 1)};
      else if (op == spv::OpConstant && count == 4)
        constant_[a[1]] = a[2];
      else if (op == spv::OpVariable && count >= 4 && a[2] != spv::StorageClassFunction)
        global_var_[a[1]] = a[2];
      if (op == spv::OpCapability && count == 2) {
        if (first_capability_ == 0) first_capability_ = i;
        if (a[0] == spv::CapabilityGroupNonUniform) has_group_non_uniform_ = true;
      }
      if (op == spv::OpExtInstImport && count >= 3 && std::string(reinterpret_cast<const char*>(&a[1])) == "GLSL.std.450")
        glsl_set_ = a[0];
      if (op == spv::OpDecorate && count >= 4 && a[1] == spv::DecorationBuiltIn) builtin_[a[2]] = a[0];
      if (op == spv::OpDecorate && count >= 4 && a[1] == spv::DecorationSpecId) spec_id_[a[0]] = a[2];
      if (op == spv::OpSpecConstant && count == 4) spec_default_[a[1]] = a[2];
      if ((op == spv::OpSpecConstantComposite || op == spv::OpConstantComposite || op == spv::OpSpecConstantOp) &&
          count >= 4)
        spec_op_[a[1]] = {op, std::vector<uint32_t>(a + 2, a + count - 1)};
      if (op == spv::OpTypeInt && count == 4 && a[1] == 32 && a[2] == 0) uint_ = a[0];
      if (op == spv::OpTypeBool) bool_ = a[0];
      if (op == spv::OpTypePointer && count == 4 && a[1] == spv::StorageClassStorageBuffer) storage_buffer_seen_ = true;
      i += count;
    }
  }

  static bool is_global_decl(uint32_t op) {
    return (op >= spv::OpTypeVoid && op <= spv::OpTypeForwardPointer) || (op >= spv::OpConstantTrue && op <= spv::OpSpecConstantOp) ||
           op == spv::OpVariable;
  }

  uint32_t fresh() { return bound_++; }

  void emit(std::vector<uint32_t>& to, uint32_t op, std::initializer_list<uint32_t> operands) {
    to.push_back(uint32_t(1 + operands.size()) << 16 | op);
    to.insert(to.end(), operands);
  }

  uint32_t constant(uint32_t type, uint32_t value) {
    if (auto it = made_const_.find({type, value}); it != made_const_.end()) return it->second;
    const uint32_t id = fresh();
    emit(globals_, spv::OpConstant, {type, id, value});
    return made_const_[{type, value}] = id;
  }

  // Types and variables the checks use, after every existing global (they may reuse its types).
  void prepare_globals() {
    if (!uint_) uint_ = fresh(), emit(globals_, spv::OpTypeInt, {uint_, 32, 0});
    if (!bool_) bool_ = fresh(), emit(globals_, spv::OpTypeBool, {bool_});
    const bool sb = storage_buffer_seen_ || w_[1] >= 0x00010300u;
    sc_ = sb ? spv::StorageClassStorageBuffer : spv::StorageClassUniform;
    const uint32_t rta = fresh(), block = fresh(), ptr_block = fresh(), ptr_private = fresh();
    ptr_buf_uint_ = fresh(), check_var_ = fresh(), bad_var_ = fresh();
    emit(globals_, spv::OpTypeRuntimeArray, {rta, uint_});
    emit(globals_, spv::OpTypeStruct, {block, uint_, rta});
    emit(globals_, spv::OpTypePointer, {ptr_block, sc_, block});
    emit(globals_, spv::OpTypePointer, {ptr_buf_uint_, sc_, uint_});
    emit(globals_, spv::OpTypePointer, {ptr_private, spv::StorageClassPrivate, uint_});
    emit(globals_, spv::OpVariable, {ptr_block, check_var_, sc_});
    emit(globals_, spv::OpVariable, {ptr_private, bad_var_, spv::StorageClassPrivate, constant(uint_, 0)});
    new_globals_.push_back(check_var_), new_globals_.push_back(bad_var_);
    emit(annotations_, spv::OpDecorate, {rta, spv::DecorationArrayStride, 4});
    emit(annotations_, spv::OpDecorate, {block, sb ? spv::DecorationBlock : spv::DecorationBufferBlock});
    emit(annotations_, spv::OpMemberDecorate, {block, 0, spv::DecorationOffset, 0});
    emit(annotations_, spv::OpMemberDecorate, {block, 1, spv::DecorationOffset, 4});
    emit(annotations_, spv::OpDecorate, {check_var_, spv::DecorationDescriptorSet, 0});
    emit(annotations_, spv::OpDecorate, {check_var_, spv::DecorationBinding, check_binding_});
  }

  // ---- races on shared memory ----------------------------------------------------------------
  // Each tracked Workgroup array (or scalar) gets a shadow of one uint per element: the epoch
  // (workgroup barriers passed) << 12 | the writer + 1 of its last plain store, the writer being
  // the local invocation index (the subgroup, in a module with subgroup-scope barriers). A load,
  // store or atomic of an element another invocation stored since the last workgroup barrier is a
  // data race under Vulkan's memory model: only a barrier orders two invocations' accesses to
  // shared memory, lanes of one subgroup included (lavapipe runs subgroups in order and the lanes
  // of one in step, so a dropped barrier changes nothing there). Atomics leave the tag as it is.

  // The value a length id has in this dispatch (0: unknown): constants, specialization constants
  // and the integer OpSpecConstantOp forms that array lengths take (gl_WorkGroupSize.x / 4).
  uint32_t value_of(uint32_t id, int depth = 0) const {
    if (auto o = spec_op_.find(id); o != spec_op_.end() && o->second.op == spv::OpSpecConstantOp && depth < 16) {
      const std::vector<uint32_t>& a = o->second.a;  // opcode, operands
      if (a.size() == 3 && a[0] == spv::OpCompositeExtract) {
        auto c = spec_op_.find(a[1]);
        return c != spec_op_.end() && c->second.op != spv::OpSpecConstantOp && a[2] < c->second.a.size()
                   ? value_of(c->second.a[a[2]], depth + 1)
                   : 0;
      }
      if (a.size() != 3) return 0;
      uint32_t v = 0;
      return spec_int_op(a[0], value_of(a[1], depth + 1), value_of(a[2], depth + 1), v) ? v : 0;
    }
    if (auto s = spec_id_.find(id); s != spec_id_.end()) {
      for (const SpecConstant& c : lim_.spec)
        if (c.id == s->second) return c.value;
      auto d = spec_default_.find(id);
      return d == spec_default_.end() ? 0 : d->second;
    }
    auto c = constant_.find(id);
    return c == constant_.end() ? 0 : c->second;
  }

  uint32_t builtin_input(uint32_t builtin) {
    if (auto b = builtin_.find(builtin); b != builtin_.end() && global_var_.count(b->second) &&
                                         global_var_[b->second] == spv::StorageClassInput) {
      if (std::find(interface_.begin(), interface_.end(), b->second) == interface_.end())
        new_inputs_.push_back(b->second);
      return b->second;
    }
    if (!ptr_input_uint_) ptr_input_uint_ = fresh(), emit(globals_, spv::OpTypePointer, {ptr_input_uint_, spv::StorageClassInput, uint_});
    const uint32_t v = fresh();
    emit(globals_, spv::OpVariable, {ptr_input_uint_, v, spv::StorageClassInput});
    emit(annotations_, spv::OpDecorate, {v, spv::DecorationBuiltIn, builtin});
    new_inputs_.push_back(v);
    return v;
  }

  void prepare_races() {
    const uint32_t t = lim_.invocations;
    if (t == 0 || w_[1] < 0x00010300u) return;  // subgroup ids need SPIR-V 1.3
    uint64_t used = 0;
    for (const auto& [var, sc] : global_var_)
      if (sc == spv::StorageClassWorkgroup) used += size_of(pointee_of(var));
    uint64_t budget = lim_.max_shared_bytes > used ? lim_.max_shared_bytes - used : 0;
    for (const auto& [var, sc] : global_var_) {
      if (sc != spv::StorageClassWorkgroup) continue;
      const uint32_t pointee = pointee_of(var);
      auto ty = type_.find(pointee);
      if (ty == type_.end()) continue;
      // Arrays (of arrays) are shadowed per innermost element of their array levels.
      std::vector<uint32_t> dims;
      uint64_t n = 1;
      for (auto at = ty; at != type_.end() && at->second.op == spv::OpTypeArray; at = type_.find(at->second.a[0])) {
        dims.push_back(value_of(at->second.a[1]));
        n *= dims.back();
      }
      if (dims.empty() && ty->second.op != spv::OpTypeInt && ty->second.op != spv::OpTypeFloat) continue;  // structs
      if (n == 0 || 4 * n > budget || (n + t - 1) / t > 64) continue;
      // A second word per element for its readers (write-after-read races) where it fits.
      const bool reads = 8 * n <= budget;
      budget -= (reads ? 8 : 4) * n;
      if (!ptr_wg_uint_) ptr_wg_uint_ = fresh(), emit(globals_, spv::OpTypePointer, {ptr_wg_uint_, spv::StorageClassWorkgroup, uint_});
      uint32_t ptr = ptr_wg_uint_;
      if (!dims.empty()) {
        const uint32_t arr = fresh();
        ptr = fresh();
        emit(globals_, spv::OpTypeArray, {arr, uint_, constant(uint_, uint32_t(reads ? 2 * n : n))});
        emit(globals_, spv::OpTypePointer, {ptr, spv::StorageClassWorkgroup, arr});
      }
      const uint32_t shadow = fresh();
      emit(globals_, spv::OpVariable, {ptr, shadow, spv::StorageClassWorkgroup});
      new_globals_.push_back(shadow);
      uint32_t read_scalar = 0;
      if (reads && dims.empty()) {
        read_scalar = fresh();
        emit(globals_, spv::OpVariable, {ptr, read_scalar, spv::StorageClassWorkgroup});
        new_globals_.push_back(read_scalar);
      }
      tracked_[var] = {shadow, uint32_t(n), dims, reads, read_scalar};
      base_of_shadow_ptr_[shadow] = var;
      if (dims.empty()) shadow_of_[var] = shadow;  // a scalar: the variable itself is the element
      if (read_scalar) read_tag_of_[shadow] = read_scalar;
    }
    if (tracked_.empty()) return;
    epoch_var_ = fresh();
    const uint32_t ptr_private = fresh();
    emit(globals_, spv::OpTypePointer, {ptr_private, spv::StorageClassPrivate, uint_});
    emit(globals_, spv::OpVariable, {ptr_private, epoch_var_, spv::StorageClassPrivate, constant(uint_, 1)});
    new_globals_.push_back(epoch_var_);
    subgroup_id_ = builtin_input(spv::BuiltInSubgroupId);
    local_index_ = builtin_input(spv::BuiltInLocalInvocationIndex);
    per_lane_ = !has_subgroup_barrier();
  }

  // Whether the module orders lanes of a subgroup by a subgroup-scope barrier (subgroupBarrier,
  // subgroupMemoryBarrierShared): then only accesses of different subgroups are compared, since
  // the shadow cannot tell which subgroup barriers a lane's store precedes.
  bool has_subgroup_barrier() const {
    for (size_t i = first_function_; first_function_ && i < w_.size(); i += w_[i] >> 16) {
      const uint32_t op = w_[i] & 0xFFFFu, count = w_[i] >> 16;
      if ((op == spv::OpControlBarrier || op == spv::OpMemoryBarrier) && count >= 3 &&
          value_of(w_[i + 1]) == spv::ScopeSubgroup)
        return true;
    }
    return false;
  }

  // Bytes of a type in shared memory, counting a 3-vector as 4 (padding rounds up, never down).
  uint64_t size_of(uint32_t type) const {
    auto t = type_.find(type);
    if (t == type_.end()) return 0;
    const Type& ty = t->second;
    switch (ty.op) {
      case spv::OpTypeBool: return 4;
      case spv::OpTypeInt:
      case spv::OpTypeFloat: return ty.a[0] / 8;
      case spv::OpTypeVector: return size_of(ty.a[0]) * (ty.a[1] == 3 ? 4 : ty.a[1]);
      case spv::OpTypeMatrix: return size_of(ty.a[0]) * ty.a[1];
      case spv::OpTypeArray: return size_of(ty.a[0]) * value_of(ty.a[1]);
      case spv::OpTypeStruct: {
        uint64_t n = 0;
        for (uint32_t m : ty.a) n += size_of(m);
        return n;
      }
      default: return 0;
    }
  }

  // The type a pointer id points to (a variable, an access chain, a parameter); 0 if unknown.
  uint32_t pointee_of(uint32_t ptr) const {
    const std::optional<Type> t = type_of_id(ptr);
    return t && t->op == spv::OpTypePointer ? t->a[1] : 0;
  }

  // Every shadow element to 0 ("no store yet"), then a workgroup barrier: at the entry's start.
  void clear_shadows(std::vector<uint32_t>& to) {
    const uint32_t lid = fresh();
    emit(to, spv::OpLoad, {uint_, lid, local_index_});
    for (const auto& [var, tr] : tracked_) {
      if (tr.dims.empty()) {
        emit(to, spv::OpStore, {tr.shadow, constant(uint_, 0)});
        if (tr.read_scalar) emit(to, spv::OpStore, {tr.read_scalar, constant(uint_, 0)});
        continue;
      }
      const uint32_t words = tr.reads ? 2 * tr.n : tr.n;
      for (uint32_t j = 0; j * lim_.invocations < words; ++j) {
        const uint32_t i = fresh(), in = fresh(), idx = fresh(), p = fresh();
        emit(to, spv::OpIAdd, {uint_, i, lid, constant(uint_, j * lim_.invocations)});
        emit(to, spv::OpULessThan, {bool_, in, i, constant(uint_, words)});
        emit(to, spv::OpSelect, {uint_, idx, in, i, constant(uint_, words - 1)});  // a repeat store of 0
        emit(to, spv::OpAccessChain, {ptr_wg_uint_, p, tr.shadow, idx});
        emit(to, spv::OpStore, {p, constant(uint_, 0)});
      }
    }
    workgroup_barrier(to);
  }

  void workgroup_barrier(std::vector<uint32_t>& to) {
    const uint32_t wg = constant(uint_, spv::ScopeWorkgroup);
    emit(to, spv::OpControlBarrier,
         {wg, wg, constant(uint_, spv::MemorySemanticsAcquireReleaseMask | spv::MemorySemanticsWorkgroupMemoryMask)});
  }

  // For a store: whether `value` equals what the element at `ptr` holds (another subgroup storing
  // the very value this one stores is the benign "every lane writes the flag" idiom); 0 where the
  // element's type has no such comparison (vectors, structs).
  uint32_t same_value(std::vector<uint32_t>& to, uint32_t ptr, uint32_t value) {
    const uint32_t elem = pointee_of(ptr);
    auto t = type_.find(elem);
    if (t == type_.end()) return 0;
    const uint32_t old = fresh(), eq = fresh();
    if (t->second.op == spv::OpTypeInt && t->second.a[0] == 32) {
      emit(to, spv::OpLoad, {elem, old, ptr});
      emit(to, spv::OpIEqual, {bool_, eq, old, value});
    } else if (t->second.op == spv::OpTypeFloat && t->second.a[0] == 32) {
      const uint32_t a = fresh(), b = fresh();
      emit(to, spv::OpLoad, {elem, old, ptr});
      emit(to, spv::OpBitcast, {uint_, a, old});
      emit(to, spv::OpBitcast, {uint_, b, value});
      emit(to, spv::OpIEqual, {bool_, eq, a, b});
    } else if (t->second.op == spv::OpTypeBool) {
      emit(to, spv::OpLoad, {elem, old, ptr});
      emit(to, spv::OpLogicalEqual, {bool_, eq, old, value});
    } else {
      return 0;
    }
    return eq;
  }

  // A load, store or atomic through `ptr` (an element of a tracked variable): the race check, the
  // uninitialised-read check, and for a store the element's new tag.
  enum class Access { kLoad, kStore, kAtomicLoad, kAtomicStore, kAtomicUpdate };
  void race_check(std::vector<uint32_t>& to, uint32_t ptr, Access kind, uint32_t value = 0);

  // Of `levels` (variable -> its array levels), the variables whose every write the instrumented
  // accesses see: stores and atomics of the variable itself where it has no array level, or
  // through an access chain of the variable that indexes every array level. Any other use of it or
  // of a pointer into it (a whole-array store, a chain of a chain, a copy, a function argument, an
  // extended instruction's out parameter) may write what the shadow does not see, so that
  // variable's reads are not called uninitialised. `whole`: a store of the whole variable is seen.
  std::set<uint32_t> fully_seen(const std::map<uint32_t, size_t>& levels, bool whole) const;

  void find_fully_seen() {
    std::map<uint32_t, size_t> levels;
    for (const auto& [var, tr] : tracked_) levels[var] = tr.dims.size();
    fully_seen_ = fully_seen(levels, false);
  }

  // ---- uninitialised locals ------------------------------------------------------------------
  // A Function or Private variable the kernel declares without an initializer (lim_.bare_vars;
  // the poison may have given it one since) gets a shadow bitmask, one bit per element of its
  // array levels, zero at its declaration: a store sets the element's bit, a load of an element
  // whose bit is clear reads a value the invocation never wrote. Whole-array loads are not
  // checked (a copy of a partly used array, as a call by value makes, is not a read of its
  // unused part); a store of the whole variable sets every bit.
  struct Local {
    uint32_t shadow = 0, ptr = 0, null = 0, storage = 0, words = 0;
    std::vector<uint32_t> dims;
  };
  void prepare_locals();
  // The shadow word of element `flat` of local `lv` (a pointer) and the element's bit in it.
  std::pair<uint32_t, uint32_t> local_bit(std::vector<uint32_t>& to, const Local& lv, uint32_t flat);
  // A load through `ptr`, if it is a tracked local's element or the whole of one without array
  // levels: the element's bit must be set.
  void local_read(std::vector<uint32_t>& to, uint32_t ptr);
  void local_write(std::vector<uint32_t>& to, uint32_t ptr);

  // The element's reader word (epoch << 12 | its reader + 1 in this epoch, 0xFFF for several): a
  // plain store to an element another invocation loaded since the last barrier is a
  // write-after-read race (unless it stores the value already there: `eq`); a load enters its
  // reader with atomics, so lanes loading in one step cannot hide one another.
  void reader_check(std::vector<uint32_t>& to, uint32_t rp, bool store, uint32_t ep, uint32_t me, uint32_t eq,
                    const std::string& var);

  uint32_t shadow_var_of(uint32_t sp) const {
    auto it = base_of_shadow_ptr_.find(sp);
    return it == base_of_shadow_ptr_.end() ? sp : it->second;
  }

  // ---- races between workgroups (spirv_access_global.cpp) --------------------------------------
  // Nothing orders two workgroups of one dispatch: an element of a storage buffer stored by one
  // workgroup and loaded or stored by another is a data race whatever order they happened to run
  // in. Each such buffer the module stores to gets a shadow in the check buffer: per element its
  // writer (workgroup + 1 of its last plain store) and readers (workgroup + 1, ~0 for several).
  // Accesses through a pointer to a whole element are checked; atomics are not (they neither race
  // among themselves nor leave a tag), nor is a module with a device-scope barrier, nor an access
  // through a pointer the shadow does not follow (a component, a function parameter).
  void prepare_global_races();
  void global_element(std::vector<uint32_t>& to, uint32_t chain, uint32_t var, uint32_t block, uint32_t member,
                      uint32_t array_type, uint32_t index);
  void global_check(std::vector<uint32_t>& to, uint32_t ptr, bool store, uint32_t value);
  uint32_t workgroup_me(std::vector<uint32_t>& to);  // gl_WorkGroupID flattened, + 1 (the tag)
  uint32_t uvec3_input(uint32_t builtin);                // the builtin's Input variable (a 3-vector)

  // ---- NaN operands --------------------------------------------------------------------------
  // min, max and clamp (FMin, FMax, FClamp) with a NaN operand return one of their operands, which
  // one being undefined: lavapipe returns the other (LLVM's maxnum), another driver may return the NaN.
  // A kernel whose identity or padding is a NaN (a -inf bit pattern off by one) is then right on
  // them only by chance; the check names the instruction wherever an operand is a NaN.
  void nan_operand(std::vector<uint32_t>& to, const std::vector<uint32_t>& inst);
  uint32_t bool_vector(uint32_t n);  // the type id of a vector of n bools (declared if missing)

  // ---- per instruction ------------------------------------------------------------------------
  std::optional<Type> type_of_id(uint32_t id) const {
    auto t = result_type_.find(id);
    if (t == result_type_.end()) return std::nullopt;
    auto d = type_.find(t->second);
    if (d == type_.end()) return std::nullopt;
    return d->second;
  }

  // A 32-bit integer scalar id (an index or shift amount); its type id, else 0.
  uint32_t int32_type(uint32_t id) const {
    const std::optional<Type> t = type_of_id(id);
    return t && t->op == spv::OpTypeInt && t->a.size() == 2 && t->a[0] == 32 ? result_type_.at(id) : 0;
  }

  // A variable's name, or (unnamed: a module without debug names) its kind and id.
  std::string name_of(uint32_t id) const {
    auto n = name_.find(id);
    if (n != name_.end() && !n->second.empty()) return "'" + n->second + "'";
    std::string kind = "variable";
    if (auto v = global_var_.find(id); v != global_var_.end())
      kind = v->second == spv::StorageClassWorkgroup ? "shared variable"
             : v->second == spv::StorageClassStorageBuffer || v->second == spv::StorageClassUniform ? "buffer"
                                                                                                   : "global";
    else if (result_type_.count(id))
      kind = "local";
    return "the " + kind + " %" + std::to_string(id);
  }

  std::string length_text(uint32_t len_id) const {
    const uint32_t n = value_of(len_id);
    return n ? std::to_string(n) + " elements" : "a specialization-constant length";
  }

  // Records a new site, violated where `cond` holds: bad = cond ? max(bad, code) : bad (the
  // entry's returns publish the largest code over all invocations). The code's rank names the
  // cause before its consequences: an out-of-range index (kIndex) rather than the race its clamping
  // to index 0 may cause (kMemory), and that rather than the NaN an uninitialised read delivers to
  // a max (kValue).
  enum class Rank : uint32_t { kValue = 0, kMemory = 1, kIndex = 2 };
  void record(std::vector<uint32_t>& to, uint32_t cond, const std::string& what, Rank rank = Rank::kIndex) {
    sites_.push_back(what + line_);
    const uint32_t site = constant(uint_, uint32_t(sites_.size()) + uint32_t(rank) * kAccessSiteRank);
    const uint32_t cur = fresh(), above = fresh(), take = fresh(), next = fresh();
    emit(to, spv::OpLoad, {uint_, cur, bad_var_});
    emit(to, spv::OpUGreaterThan, {bool_, above, site, cur});
    emit(to, spv::OpLogicalAnd, {bool_, take, cond, above});
    emit(to, spv::OpSelect, {uint_, next, take, site, cur});
    emit(to, spv::OpStore, {bad_var_, next});
  }

  // idx >= len (unsigned: a negative index is out of range too): records the site and returns
  // the index to use (0 where out of range).
  uint32_t guard_index(std::vector<uint32_t>& to, uint32_t idx, uint32_t idx_type, uint32_t len,
                       const std::string& what) {
    const uint32_t c = fresh(), safe = fresh();
    emit(to, spv::OpUGreaterThanEqual, {bool_, c, idx, len});
    record(to, c, what);
    emit(to, spv::OpSelect, {idx_type, safe, c, constant(idx_type, 0), idx});
    return safe;
  }

  // The element count of the runtime array member `member` of the block bound at `binding`.
  uint32_t runtime_length(std::vector<uint32_t>& to, uint32_t binding, uint32_t block, uint32_t member,
                          uint32_t array_type) {
    auto s = stride_.find(array_type);
    if (s == stride_.end() || s->second == 0) return 0;
    const RuntimeLength want{binding, offset_.count({block, member}) ? offset_.at({block, member}) : 0, s->second};
    // Its element count is one word of the check buffer, filled by the runner: a load per access
    // (the same address in every invocation), no division in the kernel's loops.
    const size_t slot = size_t(std::find(lengths_.begin(), lengths_.end(), want) - lengths_.begin());
    if (slot == lengths_.size()) lengths_.push_back(want);
    const uint32_t p = fresh(), len = fresh();
    emit(to, spv::OpAccessChain, {ptr_buf_uint_, p, check_var_, constant(uint_, 1), constant(uint_, uint32_t(slot))});
    emit(to, spv::OpLoad, {uint_, len, p});
    return len;
  }

  // OpAccessChain / OpInBoundsAccessChain: every dynamic index checked against its level's length.
  void access_chain(std::vector<uint32_t>& to, std::vector<uint32_t> inst) {
    const uint32_t base = inst[3];
    uint32_t cur = pointee_of(base);
    const bool buffer_var = global_var_.count(base) && binding_.count(base) &&
                            (global_var_[base] == spv::StorageClassStorageBuffer ||
                             global_var_[base] == spv::StorageClassUniform) &&
                            (!set_.count(base) || set_[base] == 0);
    uint32_t block = 0, member = 0;
    size_t rt_at = 0;  // the index of the buffer's runtime array, if the chain has one
    uint32_t rt_type = 0;
    for (size_t k = 4; k < inst.size() && cur; ++k) {
      auto t = type_.find(cur);
      if (t == type_.end()) break;
      const uint32_t idx = inst[k], it = int32_type(idx);
      const Type& ty = t->second;
      if (ty.op == spv::OpTypeStruct) {
        auto c = constant_.find(idx);
        if (c == constant_.end() || c->second >= ty.a.size()) break;
        block = cur, member = c->second, cur = ty.a[c->second];
        continue;
      }
      uint32_t len = 0;
      std::string what;
      if (ty.op == spv::OpTypeArray) {
        len = ty.a[1];
        what = "index into " + name_of(base) + " (an array of " + length_text(len) + ")";
      } else if (ty.op == spv::OpTypeRuntimeArray && buffer_var && k == 5 && block) {
        if (it) len = runtime_length(to, binding_[base], block, member, cur);
        if (it) rt_at = k, rt_type = cur;
        auto mn = member_name_.find({block, member});
        what = "index into " + (mn != member_name_.end() && !mn->second.empty() ? "'" + mn->second + "'" : name_of(base)) +
               " (binding " + std::to_string(binding_[base]) + ") past the buffer's usable size";
      } else if ((ty.op == spv::OpTypeVector || ty.op == spv::OpTypeMatrix) && it) {
        len = constant(it, ty.a[1]);
        what = "component index of " + name_of(base) + " (of " + std::to_string(ty.a[1]) + ")";
      }
      if (len && it && !constant_.count(idx)) inst[k] = guard_index(to, idx, it, len, what);
      cur = ty.a[0];
    }
    to.insert(to.end(), inst.begin(), inst.end());
    if (rt_at && rt_at + 1 == inst.size() && global_tracked_.count(base))  // a whole element
      global_element(to, inst[2], base, block, member, rt_type, inst[rt_at]);
    auto tr = tracked_.find(base);
    const size_t levels = tr == tracked_.end() ? 0 : tr->second.dims.size();
    if (levels && inst.size() >= 4 + levels) {  // every array level indexed: the element's shadow
      uint32_t flat = inst[4];                   // the (checked) indices, row-major
      for (size_t l = 1; l < levels; ++l) {
        const uint32_t scaled = fresh(), sum = fresh();
        emit(to, spv::OpIMul, {uint_, scaled, flat, constant(uint_, tr->second.dims[l])});
        emit(to, spv::OpIAdd, {uint_, sum, scaled, inst[4 + l]});
        flat = sum;
      }
      const uint32_t sp = fresh();
      emit(to, spv::OpAccessChain, {ptr_wg_uint_, sp, tr->second.shadow, flat});
      shadow_of_[inst[2]] = sp, base_of_shadow_ptr_[sp] = base;
      if (tr->second.reads) {  // the element's reader word, n words on
        const uint32_t at = fresh(), rp = fresh();
        emit(to, spv::OpIAdd, {uint_, at, flat, constant(uint_, tr->second.n)});
        emit(to, spv::OpAccessChain, {ptr_wg_uint_, rp, tr->second.shadow, at});
        read_tag_of_[sp] = rp;
      }
    }
    if (auto lv = locals_.find(base); lv != locals_.end() && inst.size() >= 4 + lv->second.dims.size()) {
      uint32_t flat = constant(uint_, 0);
      for (size_t l = 0; l < lv->second.dims.size(); ++l) {
        const uint32_t scaled = fresh(), sum = fresh();
        emit(to, spv::OpIMul, {uint_, scaled, flat, constant(uint_, lv->second.dims[l])});
        emit(to, spv::OpIAdd, {uint_, sum, scaled, inst[4 + l]});
        flat = sum;
      }
      local_elem_[inst[2]] = {base, flat};
    }
  }

  void instruction(std::vector<uint32_t>& to, std::vector<uint32_t> inst, bool in_entry) {
    const uint32_t op = inst[0] & 0xFFFFu;
    if (clear_pending_ && op != spv::OpFunction && op != spv::OpFunctionParameter && op != spv::OpLabel &&
        op != spv::OpVariable && op != spv::OpLine && op != spv::OpNoLine) {
      clear_pending_ = false;
      if (!tracked_.empty()) clear_shadows(to);
      if (!global_tracked_.empty()) emit(to, spv::OpStore, {wg_me_var_, workgroup_me(to)});
    }
    if (op == spv::OpLoad && inst.size() >= 4 && shadow_of_.count(inst[3])) race_check(to, inst[3], Access::kLoad);
    if (op == spv::OpVariable && inst.size() >= 4 && inst[3] == spv::StorageClassFunction && locals_.count(inst[2])) {
      const Local& lv = locals_.at(inst[2]);
      to.insert(to.end(), inst.begin(), inst.end());
      emit(to, spv::OpVariable, {lv.ptr, lv.shadow, spv::StorageClassFunction, lv.null});
      return;
    }
    if (op == spv::OpLoad && inst.size() >= 4) local_read(to, inst[3]);
    if (op == spv::OpStore && inst.size() >= 3) local_write(to, inst[1]);
    // An atomic races a plain store of another subgroup in the same epoch (atomics among
    // themselves do not race, and they leave the element's tag as it is).
    if (op >= spv::OpAtomicLoad && op <= spv::OpAtomicXor && op != spv::OpAtomicCompareExchangeWeak) {
      const uint32_t p = op == spv::OpAtomicStore ? inst[1] : inst[3];
      if (shadow_of_.count(p))
        race_check(to, p, op == spv::OpAtomicLoad ? Access::kAtomicLoad : op == spv::OpAtomicStore ? Access::kAtomicStore
                                                                                                     : Access::kAtomicUpdate);
    }
    if (op == spv::OpStore && inst.size() >= 3 && shadow_of_.count(inst[1])) race_check(to, inst[1], Access::kStore, inst[2]);
    if (op == spv::OpLoad && inst.size() >= 4 && global_shadow_of_.count(inst[3])) global_check(to, inst[3], false, 0);
    if (op == spv::OpStore && inst.size() >= 3 && global_shadow_of_.count(inst[1]))
      global_check(to, inst[1], true, inst[2]);
    if (op == spv::OpControlBarrier && inst.size() == 4 && value_of(inst[1]) == spv::ScopeWorkgroup && epoch_var_) {
      to.insert(to.end(), inst.begin(), inst.end());
      const uint32_t e0 = fresh(), e1 = fresh();  // the next epoch
      emit(to, spv::OpLoad, {uint_, e0, epoch_var_});
      emit(to, spv::OpIAdd, {uint_, e1, e0, constant(uint_, 1)});
      emit(to, spv::OpStore, {epoch_var_, e1});
      return;
    }
    if (op == spv::OpLine && inst.size() >= 4) line_ = " at line " + std::to_string(inst[2]);
    if (op == spv::OpExtInst) nan_operand(to, inst);
    if ((op == spv::OpAccessChain || op == spv::OpInBoundsAccessChain) && inst.size() >= 5)
      return access_chain(to, std::move(inst));
    if ((op == spv::OpVectorExtractDynamic && inst.size() == 5) || (op == spv::OpVectorInsertDynamic && inst.size() == 6)) {
      const size_t k = inst.size() - 1;
      const std::optional<Type> vt = type_of_id(inst[3]);
      const uint32_t it = int32_type(inst[k]);
      if (vt && vt->op == spv::OpTypeVector && it && !constant_.count(inst[k]))
        inst[k] = guard_index(to, inst[k], it, constant(it, vt->a[1]),
                              "dynamic component index (of " + std::to_string(vt->a[1]) + ")");
    } else if ((op == spv::OpShiftRightLogical || op == spv::OpShiftRightArithmetic || op == spv::OpShiftLeftLogical) &&
               inst.size() == 5) {
      const std::optional<Type> base = type_of_id(inst[3]);
      const uint32_t st = int32_type(inst[4]);
      if (base && base->op == spv::OpTypeInt && st) {  // scalar shifts (vectors are not checked)
        const uint32_t c = fresh();
        emit(to, spv::OpUGreaterThanEqual, {bool_, c, inst[4], constant(st, base->a[0])});
        record(to, c, "shift by " + std::to_string(base->a[0]) + " or more bits");
      }
    } else if ((op == spv::OpGroupNonUniformShuffle || op == spv::OpGroupNonUniformShuffleXor) && inst.size() == 6 &&
               lim_.subgroup_size && value_of(inst[3]) == spv::ScopeSubgroup) {
      // A lane id (Shuffle) or mask (ShuffleXor: lane ^ mask leaves the subgroup exactly when
      // mask >= its power-of-two size) naming no lane of the subgroup: the result is undefined.
      if (const uint32_t it = int32_type(inst[5]))
        inst[5] = guard_index(to, inst[5], it, constant(it, lim_.subgroup_size),
                              std::string(op == spv::OpGroupNonUniformShuffle ? "shuffle id" : "shuffle xor mask") +
                                  " naming no lane of the subgroup (of " + std::to_string(lim_.subgroup_size) + ")");
    } else if (op == spv::OpReturn && in_entry) {
      // if (bad != 0) atomicMax(check[0], bad); return — only invocations that saw a violation
      // touch the one shared word. The block ending here becomes the selection's header.
      const uint32_t v = fresh(), nz = fresh(), then = fresh(), merge = fresh(), p = fresh(), r = fresh();
      emit(to, spv::OpLoad, {uint_, v, bad_var_});
      emit(to, spv::OpINotEqual, {bool_, nz, v, constant(uint_, 0)});
      emit(to, spv::OpSelectionMerge, {merge, spv::SelectionControlMaskNone});
      emit(to, spv::OpBranchConditional, {nz, then, merge});
      emit(to, spv::OpLabel, {then});
      emit(to, spv::OpAccessChain, {ptr_buf_uint_, p, check_var_, constant(uint_, 0)});
      emit(to, spv::OpAtomicUMax,
           {uint_, r, p, constant(uint_, spv::ScopeDevice), constant(uint_, spv::MemorySemanticsMaskNone), v});
      emit(to, spv::OpBranch, {merge});
      emit(to, spv::OpLabel, {merge});
    }
    to.insert(to.end(), inst.begin(), inst.end());
  }

  std::vector<uint32_t> instrument_functions() {
    std::vector<uint32_t> out;
    bool in_entry = false;
    for (size_t i = first_function_; first_function_ && i < w_.size();) {
      const uint32_t count = w_[i] >> 16, op = w_[i] & 0xFFFFu;
      if (op == spv::OpFunction) in_entry = w_[i + 2] == entry_fn_, clear_pending_ = in_entry;
      instruction(out, std::vector<uint32_t>(&w_[i], &w_[i + count]), in_entry);
      i += count;
    }
    return out;
  }

  // Header, the original global section with the new annotations and globals spliced in, the
  // entry point's interface extended (SPIR-V 1.4 lists every global it uses), then the bodies.
  std::vector<uint32_t> assemble(const std::vector<uint32_t>& body) {
    std::vector<uint32_t> out(w_.begin(), w_.begin() + 5);
    const size_t annot = first_annotation_ ? first_annotation_ : first_function_;
    std::vector<uint32_t> extra = new_inputs_;
    if (w_[1] >= 0x00010400u) extra.insert(extra.end(), new_globals_.begin(), new_globals_.end());
    for (size_t i = 5; i < first_function_;) {
      const uint32_t count = w_[i] >> 16;
      if (i == annot) out.insert(out.end(), annotations_.begin(), annotations_.end());
      if (i == first_capability_ && !tracked_.empty() && !has_group_non_uniform_)
        emit(out, spv::OpCapability, {spv::CapabilityGroupNonUniform});
      if (i == entry_at_) {
        out.push_back(uint32_t(count + extra.size()) << 16 | spv::OpEntryPoint);
        out.insert(out.end(), &w_[i + 1], &w_[i + count]);
        out.insert(out.end(), extra.begin(), extra.end());
      } else {
        out.insert(out.end(), &w_[i], &w_[i + count]);
      }
      i += count;
    }
    out.insert(out.end(), globals_.begin(), globals_.end());
    out.insert(out.end(), body.begin(), body.end());
    out[3] = bound_;
    return out;
  }

  std::span<const uint32_t> w_;
  const std::string& label_;
  const std::string& entry_;
  uint32_t bound_;
  size_t first_function_ = 0, first_annotation_ = 0, entry_at_ = 0;
  uint32_t entry_fn_ = 0, uint_ = 0, bool_ = 0, sc_ = 0, ptr_buf_uint_ = 0, check_var_ = 0, bad_var_ = 0;
  uint32_t check_binding_ = 0, glsl_set_ = 0;
  std::map<uint32_t, uint32_t> made_bool_vector_;  // components -> a vector type the checks declared
  bool storage_buffer_seen_ = false;
  std::map<uint32_t, uint32_t> result_type_, binding_, set_, stride_, constant_, global_var_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> offset_, made_const_;
  std::map<std::pair<uint32_t, uint32_t>, std::string> member_name_;
  std::map<uint32_t, Type> type_;
  std::map<uint32_t, std::string> name_;
  std::vector<uint32_t> globals_, annotations_;
  std::vector<std::string> sites_;
  std::vector<RuntimeLength> lengths_;
  std::string line_;
  // Races.
  struct Tracked {
    uint32_t shadow = 0, n = 0;  // n elements in all
    std::vector<uint32_t> dims;  // array lengths, outermost first (none: a scalar)
    bool reads = false;          // reader words too: an array's at n + i, a scalar's in read_scalar
    uint32_t read_scalar = 0;
  };
  std::map<uint32_t, uint32_t> read_tag_of_;  // an element's shadow pointer -> its reader word
  const AccessLimits& lim_;
  size_t first_capability_ = 0;
  bool has_group_non_uniform_ = false, clear_pending_ = false;
  uint32_t ptr_input_uint_ = 0, ptr_wg_uint_ = 0, epoch_var_ = 0, subgroup_id_ = 0, local_index_ = 0;
  bool per_lane_ = false;  // the shadow's writer is the invocation (else its subgroup)
  std::map<uint32_t, uint32_t> builtin_, spec_id_, spec_default_, shadow_of_, base_of_shadow_ptr_;
  std::map<uint32_t, Tracked> tracked_;
  std::set<uint32_t> fully_seen_;  // tracked variables every write of which updates the shadow
  // Races between workgroups.
  struct GlobalShadow {
    uint32_t writer = 0, reader = 0, on = 0;  // pointers to the two words; bool: a shadow was given
    std::string what;                          // the buffer, as a site names it
  };
  std::set<uint32_t> global_tracked_;                 // storage-buffer variables with shadows
  std::map<uint32_t, GlobalShadow> global_shadow_of_;  // pointer to a whole element -> its shadow
  uint32_t uvec3_ = 0, wg_me_var_ = 0;  // wg_me_var_: the workgroup's tag, set at the entry's start
  // Uninitialised locals.
  std::map<uint32_t, Local> locals_;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> local_elem_;  // pointer -> (variable, flat element)
  std::map<uint32_t, uint32_t> ptr_uint_of_;                       // storage class -> pointer to uint
  std::map<uint32_t, Type> spec_op_;  // composite constants and OpSpecConstantOp: {op, operands}
  std::vector<uint32_t> interface_, new_inputs_, new_globals_;
};

}  // namespace moe::vk::detail
