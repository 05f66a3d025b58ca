// Races between workgroups of one dispatch on storage buffers (the Checker of
// spirv_access_checker.h): which buffers get shadows, and the check at each access.
#include "compare/vk/spirv_access_checker.h"

namespace moe::vk::detail {

namespace {
constexpr uint32_t kOn = 0x80000000u;  // a shadow slot's flag: the runner gave this buffer a shadow
}  // namespace

// Buffers of set 0 the module writes with a plain store through an access chain rooted at them.
// None where a barrier's memory scope is wider than the workgroup (or not a constant): such a
// module may order workgroups itself (an atomic counter and memoryBarrierBuffer, the "last
// workgroup reduces" idiom), which the shadow cannot follow.
void Checker::prepare_global_races() {
  std::map<uint32_t, uint32_t> root;  // pointer id -> its buffer variable
  for (const auto& [var, sc] : global_var_)
    if ((sc == spv::StorageClassStorageBuffer || sc == spv::StorageClassUniform) && binding_.count(var) &&
        (!set_.count(var) || set_.at(var) == 0))
      root[var] = var;
  std::set<uint32_t> written;
  for (size_t i = first_function_; first_function_ && i < w_.size();) {
    const uint32_t count = w_[i] >> 16, op = w_[i] & 0xFFFFu;
    const uint32_t* a = &w_[i + 1];
    i += count;
    uint32_t scope = spv::ScopeWorkgroup;
    if (op == spv::OpControlBarrier && count >= 4) scope = a[1];
    if (op == spv::OpMemoryBarrier && count >= 3) scope = a[0];
    if (scope != spv::ScopeWorkgroup) {
      const uint32_t v = value_of(scope);
      if (!constant_.count(scope) || (v != spv::ScopeWorkgroup && v != spv::ScopeSubgroup && v != spv::ScopeInvocation))
        return;
    }
    if ((op == spv::OpAccessChain || op == spv::OpInBoundsAccessChain) && count >= 5) {
      if (auto r = root.find(a[2]); r != root.end()) root[a[1]] = r->second;
    } else if (op == spv::OpStore && count >= 3) {
      if (auto r = root.find(a[0]); r != root.end()) written.insert(r->second);
    }
  }
  if (written.empty()) return;
  global_tracked_ = std::move(written);
  for (const auto& [id, ty] : type_)
    if (ty.op == spv::OpTypeVector && ty.a.size() == 2 && ty.a[0] == uint_ && ty.a[1] == 3) uvec3_ = id;
  if (!uvec3_) uvec3_ = fresh(), emit(globals_, spv::OpTypeVector, {uvec3_, uint_, 3});
  const uint32_t ptr_private = fresh();
  wg_me_var_ = fresh();
  emit(globals_, spv::OpTypePointer, {ptr_private, spv::StorageClassPrivate, uint_});
  emit(globals_, spv::OpVariable, {ptr_private, wg_me_var_, spv::StorageClassPrivate, constant(uint_, 0)});
  new_globals_.push_back(wg_me_var_);
}

// The shadow words of the element `index` of the runtime array reached by `chain`.
void Checker::global_element(std::vector<uint32_t>& to, uint32_t chain, uint32_t var, uint32_t block, uint32_t member,
                             uint32_t array_type, uint32_t index) {
  auto s = stride_.find(array_type);
  if (s == stride_.end() || s->second == 0) return;
  const RuntimeLength want{binding_.at(var), offset_.count({block, member}) ? offset_.at({block, member}) : 0,
                           s->second, true};
  const size_t slot = size_t(std::find(lengths_.begin(), lengths_.end(), want) - lengths_.begin());
  if (slot == lengths_.size()) lengths_.push_back(want);
  const uint32_t sp = fresh(), v = fresh(), flag = fresh(), on = fresh(), base = fresh();
  const uint32_t twice = fresh(), step = fresh(), wat = fresh(), rat = fresh(), pw = fresh(), pr = fresh();
  emit(to, spv::OpAccessChain, {ptr_buf_uint_, sp, check_var_, constant(uint_, 1), constant(uint_, uint32_t(slot))});
  emit(to, spv::OpLoad, {uint_, v, sp});
  emit(to, spv::OpBitwiseAnd, {uint_, flag, v, constant(uint_, kOn)});
  emit(to, spv::OpINotEqual, {bool_, on, flag, constant(uint_, 0)});
  emit(to, spv::OpBitwiseAnd, {uint_, base, v, constant(uint_, ~kOn)});
  // Without a shadow every element shares the runner's scratch pair (and no site is recorded).
  emit(to, spv::OpIMul, {uint_, twice, index, constant(uint_, 2)});
  emit(to, spv::OpSelect, {uint_, step, on, twice, constant(uint_, 0)});
  emit(to, spv::OpIAdd, {uint_, wat, base, step});
  emit(to, spv::OpIAdd, {uint_, rat, wat, constant(uint_, 1)});
  emit(to, spv::OpAccessChain, {ptr_buf_uint_, pw, check_var_, constant(uint_, 1), wat});
  emit(to, spv::OpAccessChain, {ptr_buf_uint_, pr, check_var_, constant(uint_, 1), rat});
  auto mn = member_name_.find({block, member});
  const std::string name = mn != member_name_.end() && !mn->second.empty() ? "'" + mn->second + "'" : name_of(var);
  global_shadow_of_[chain] = {pw, pr, on, name + " (binding " + std::to_string(want.binding) + ")"};
}

uint32_t Checker::uvec3_input(uint32_t builtin) {
  if (auto b = builtin_.find(builtin);
      b != builtin_.end() && global_var_.count(b->second) && global_var_[b->second] == spv::StorageClassInput) {
    if (std::find(interface_.begin(), interface_.end(), b->second) == interface_.end() &&
        std::find(new_inputs_.begin(), new_inputs_.end(), b->second) == new_inputs_.end())
      new_inputs_.push_back(b->second);
    return b->second;
  }
  const uint32_t ptr = fresh(), v = fresh();
  emit(globals_, spv::OpTypePointer, {ptr, spv::StorageClassInput, uvec3_});
  emit(globals_, spv::OpVariable, {ptr, v, spv::StorageClassInput});
  emit(annotations_, spv::OpDecorate, {v, spv::DecorationBuiltIn, builtin});
  new_inputs_.push_back(v);
  builtin_[builtin] = v, global_var_[v] = spv::StorageClassInput;
  type_[ptr] = {spv::OpTypePointer, {spv::StorageClassInput, uvec3_}};
  result_type_[v] = ptr;
  return v;
}

// x + nx (y + ny z) + 1: the workgroup's index in the dispatch, as its tag (0: none).
uint32_t Checker::workgroup_me(std::vector<uint32_t>& to) {
  uint32_t c[2][3];
  const uint32_t vars[2] = {uvec3_input(spv::BuiltInWorkgroupId), uvec3_input(spv::BuiltInNumWorkgroups)};
  for (int k = 0; k < 2; ++k) {
    const uint32_t vt = pointee_of(vars[k]), v = fresh();
    emit(to, spv::OpLoad, {vt, v, vars[k]});
    auto t = type_.find(vt);
    const uint32_t comp = t != type_.end() && t->second.op == spv::OpTypeVector ? t->second.a[0] : uint_;
    for (uint32_t j = 0; j < 3; ++j) {
      const uint32_t e = fresh();
      emit(to, spv::OpCompositeExtract, {comp, e, v, j});
      c[k][j] = e;
      if (comp != uint_) c[k][j] = fresh(), emit(to, spv::OpBitcast, {uint_, c[k][j], e});
    }
  }
  const uint32_t zy = fresh(), yz = fresh(), xyz = fresh(), idx = fresh(), me = fresh();
  emit(to, spv::OpIMul, {uint_, zy, c[0][2], c[1][1]});
  emit(to, spv::OpIAdd, {uint_, yz, zy, c[0][1]});
  emit(to, spv::OpIMul, {uint_, xyz, yz, c[1][0]});
  emit(to, spv::OpIAdd, {uint_, idx, xyz, c[0][0]});
  emit(to, spv::OpIAdd, {uint_, me, idx, constant(uint_, 1)});
  return me;
}

// A load: another workgroup's store before it is a race; the load enters itself as a reader
// (an atomic exchange, raised to "several" when another workgroup's tag comes back). A store:
// another workgroup's store or load before it is a race, unless it stores the value the element
// already holds (the benign "every workgroup writes the flag" idiom, as for shared memory). Each
// side swaps its own word first and reads the other's after, so a load and a store of two
// workgroups cannot both miss each other where the exchange orders what follows it (an x86 CPU
// driver: a locked exchange); on a GPU whose relaxed atomics do not, both may, in the one
// interleaving where each reads before the other's swap lands (a missed race, never a false one).
// The order the driver ran the workgroups in decides which of the two sides reports.
void Checker::global_check(std::vector<uint32_t>& to, uint32_t ptr, bool store, uint32_t value) {
  const GlobalShadow& g = global_shadow_of_.at(ptr);
  const uint32_t dev = constant(uint_, spv::ScopeDevice), relaxed = constant(uint_, spv::MemorySemanticsMaskNone);
  const uint32_t me = fresh();
  emit(to, spv::OpLoad, {uint_, me, wg_me_var_});
  // tag != 0 && tag != me && the shadow is on && (not a store of the same value)
  const uint32_t eq = store ? same_value(to, ptr, value) : 0;
  const auto other = [&](uint32_t tag) {
    const uint32_t some = fresh(), not_me = fresh(), both = fresh(), race = fresh();
    emit(to, spv::OpINotEqual, {bool_, some, tag, constant(uint_, 0)});
    emit(to, spv::OpINotEqual, {bool_, not_me, tag, me});
    emit(to, spv::OpLogicalAnd, {bool_, both, some, not_me});
    emit(to, spv::OpLogicalAnd, {bool_, race, both, g.on});
    if (!eq) return race;
    const uint32_t differs = fresh(), cond = fresh();
    emit(to, spv::OpLogicalNot, {bool_, differs, eq});
    emit(to, spv::OpLogicalAnd, {bool_, cond, race, differs});
    return cond;
  };
  const std::string between = " in this dispatch (a data race between workgroups: nothing orders them)";
  const uint32_t w = fresh(), r = fresh();
  if (store) {
    emit(to, spv::OpAtomicExchange, {uint_, w, g.writer, dev, relaxed, me});
    record(to, other(w), g.what + ": a store to an element another workgroup stored" + between, Rank::kMemory);
    emit(to, spv::OpAtomicLoad, {uint_, r, g.reader, dev, relaxed});
    record(to, other(r), g.what + ": a store to an element another workgroup loaded" + between, Rank::kMemory);
    return;
  }
  emit(to, spv::OpAtomicExchange, {uint_, r, g.reader, dev, relaxed, me});
  emit(to, spv::OpAtomicLoad, {uint_, w, g.writer, dev, relaxed});
  record(to, other(w), g.what + ": a load of an element another workgroup stored" + between, Rank::kMemory);
  const uint32_t some = fresh(), not_me = fresh(), several = fresh(), raise = fresh(), old = fresh();
  emit(to, spv::OpINotEqual, {bool_, some, r, constant(uint_, 0)});
  emit(to, spv::OpINotEqual, {bool_, not_me, r, me});
  emit(to, spv::OpLogicalAnd, {bool_, several, some, not_me});
  emit(to, spv::OpSelect, {uint_, raise, several, constant(uint_, ~0u), constant(uint_, 0)});
  emit(to, spv::OpAtomicUMax, {uint_, old, g.reader, dev, relaxed, raise});
}

}  // namespace moe::vk::detail
