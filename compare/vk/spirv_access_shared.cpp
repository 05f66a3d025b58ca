// The shared-memory shadows' checks at each access (the Checker of spirv_access_checker.h): races
// between invocations, write-after-read races and reads of elements nothing stored.
#include "compare/vk/spirv_access_checker.h"

namespace moe::vk::detail {

void Checker::race_check(std::vector<uint32_t>& to, uint32_t ptr, Access kind, uint32_t value) {
  const bool store = kind == Access::kStore;
  const bool atomic = kind != Access::kLoad && kind != Access::kStore;
  const uint32_t sp = shadow_of_.at(ptr);
  const uint32_t s = fresh(), who = fresh(), when = fresh(), ep = fresh(), sg = fresh(), me = fresh();
  const uint32_t same = fresh(), other = fresh(), some = fresh(), both = fresh(), race = fresh();
  emit(to, spv::OpLoad, {uint_, s, sp});
  emit(to, spv::OpBitwiseAnd, {uint_, who, s, constant(uint_, 0xFFF)});
  emit(to, spv::OpShiftRightLogical, {uint_, when, s, constant(uint_, 12)});
  emit(to, spv::OpLoad, {uint_, ep, epoch_var_});
  emit(to, spv::OpLoad, {uint_, sg, per_lane_ ? local_index_ : subgroup_id_});
  emit(to, spv::OpIAdd, {uint_, me, sg, constant(uint_, 1)});
  emit(to, spv::OpIEqual, {bool_, same, when, ep});
  emit(to, spv::OpINotEqual, {bool_, other, who, me});
  emit(to, spv::OpINotEqual, {bool_, some, who, constant(uint_, 0)});
  emit(to, spv::OpLogicalAnd, {bool_, both, other, some});
  uint32_t when_race = both;
  const uint32_t eq = store ? same_value(to, ptr, value) : 0;
  if (eq) {
    const uint32_t differs = fresh();
    when_race = fresh();
    emit(to, spv::OpLogicalNot, {bool_, differs, eq});
    emit(to, spv::OpLogicalAnd, {bool_, when_race, both, differs});
  }
  emit(to, spv::OpLogicalAnd, {bool_, race, same, when_race});
  const std::string var = name_of(shadow_var_of(sp));
  record(to, race, var + ": " + (store ? "a store to" : kind == Access::kLoad ? "a load of" : "an atomic on") +
                       " an element another " + (per_lane_ ? "invocation" : "subgroup") +
                       " stored since the last barrier (a data race)",
         Rank::kMemory);
  // A tag of 0: no invocation has stored the element since the workgroup started. Only where
  // every write to the variable passes through here (fully_seen_), else a write the shadow
  // missed would read as none.
  const bool reads = kind == Access::kLoad || kind == Access::kAtomicLoad || kind == Access::kAtomicUpdate;
  if (reads && fully_seen_.count(shadow_var_of(sp))) {
    const uint32_t never = fresh();
    emit(to, spv::OpIEqual, {bool_, never, s, constant(uint_, 0)});
    record(to, never, var + ": " + (atomic ? "an atomic read of" : "a load of") +
                          " an element no invocation stored since the workgroup started (uninitialised shared memory)",
           Rank::kMemory);
  }
  if (atomic && kind != Access::kAtomicLoad) {  // written now: a tag with no subgroup (no race)
    const uint32_t hi = fresh(), never = fresh(), tag = fresh();
    emit(to, spv::OpShiftLeftLogical, {uint_, hi, ep, constant(uint_, 12)});
    emit(to, spv::OpIEqual, {bool_, never, s, constant(uint_, 0)});
    emit(to, spv::OpSelect, {uint_, tag, never, hi, s});
    emit(to, spv::OpStore, {sp, tag});
  }
  if (auto rt = read_tag_of_.find(sp); rt != read_tag_of_.end() && (store || kind == Access::kLoad))
    reader_check(to, rt->second, store, ep, me, eq, var);
  if (!store) return;
  const uint32_t hi = fresh(), tag = fresh();
  emit(to, spv::OpShiftLeftLogical, {uint_, hi, ep, constant(uint_, 12)});
  emit(to, spv::OpBitwiseOr, {uint_, tag, hi, me});
  emit(to, spv::OpStore, {sp, tag});
}

std::set<uint32_t> Checker::fully_seen(const std::map<uint32_t, size_t>& levels, bool whole) const {
  std::map<uint32_t, uint32_t> root;  // pointer id -> its variable
  std::set<uint32_t> element;         // pointers to one element (the shadow follows them)
  std::set<uint32_t> opaque, seen;
  for (const auto& [var, n] : levels) {
    root[var] = var;
    if (n == 0) element.insert(var);
  }
  for (size_t i = first_function_; first_function_ && i < w_.size();) {
    const uint32_t count = w_[i] >> 16, op = w_[i] & 0xFFFFu;
    const uint32_t* a = &w_[i + 1];
    i += count;
    if (op == spv::OpLoad || op == spv::OpAtomicLoad) continue;  // reads only
    if ((op == spv::OpAccessChain || op == spv::OpInBoundsAccessChain) && count >= 5) {
      auto r = root.find(a[2]);
      if (r == root.end()) continue;
      root[a[1]] = r->second;
      if (a[2] == r->second && count - 4 >= levels.at(r->second)) element.insert(a[1]);
      continue;
    }
    // Writes the instrumentation sees (the atomics race_check handles: not the weak exchange).
    const bool store = (op == spv::OpStore && count >= 3) || (op == spv::OpAtomicStore && count >= 5);
    const bool update = op > spv::OpAtomicStore && op <= spv::OpAtomicXor && op != spv::OpAtomicCompareExchangeWeak &&
                        count >= 4;
    if ((store && element.count(a[0])) || (update && element.count(a[2]))) continue;
    if (whole && store && root.count(a[0]) && a[0] == root.at(a[0])) continue;
    bool has_result = false, has_type = false;
    spv::HasResultAndType(spv::Op(op), &has_result, &has_type);
    for (uint32_t k = uint32_t(has_result) + uint32_t(has_type); k + 1 < count; ++k)
      if (auto r = root.find(a[k]); r != root.end()) opaque.insert(r->second);
  }
  for (const auto& [var, n] : levels)
    if (!opaque.count(var)) seen.insert(var);
  return seen;
}

// The reader word of an element: epoch << 12 | the reader + 1 of its loads since the last
// barrier, 0xFFF for several. A load swaps its own tag in atomically and, if another reader's tag
// of this epoch came back, raises the word to 0xFFF: lanes that load in one step (a GPU's subgroup,
// lavapipe's vector lanes) each see the tag before theirs, so none can hide another's read, as a
// plain load-then-store of the word would (the last lane's tag winning, a store by that lane then
// looking like a write over its own read only).
void Checker::reader_check(std::vector<uint32_t>& to, uint32_t rp, bool store, uint32_t ep, uint32_t me,
                           uint32_t eq, const std::string& var) {
  const uint32_t wg = constant(uint_, spv::ScopeWorkgroup), relaxed = constant(uint_, spv::MemorySemanticsMaskNone);
  const uint32_t r = fresh(), who = fresh(), when = fresh(), now = fresh(), other = fresh();
  uint32_t mine = 0, hi = 0;
  if (store) {
    emit(to, spv::OpAtomicLoad, {uint_, r, rp, wg, relaxed});
  } else {
    hi = fresh(), mine = fresh();
    emit(to, spv::OpShiftLeftLogical, {uint_, hi, ep, constant(uint_, 12)});
    emit(to, spv::OpBitwiseOr, {uint_, mine, hi, me});
    emit(to, spv::OpAtomicExchange, {uint_, r, rp, wg, relaxed, mine});
  }
  emit(to, spv::OpBitwiseAnd, {uint_, who, r, constant(uint_, 0xFFF)});
  emit(to, spv::OpShiftRightLogical, {uint_, when, r, constant(uint_, 12)});
  emit(to, spv::OpIEqual, {bool_, now, when, ep});
  emit(to, spv::OpINotEqual, {bool_, other, who, me});
  const uint32_t race = fresh();
  emit(to, spv::OpLogicalAnd, {bool_, race, now, other});
  if (store) {
    uint32_t cond = race;
    if (eq) {
      const uint32_t differs = fresh();
      cond = fresh();
      emit(to, spv::OpLogicalNot, {bool_, differs, eq});
      emit(to, spv::OpLogicalAnd, {bool_, cond, race, differs});
    }
    record(to, cond, var + ": a store to an element another " + (per_lane_ ? "invocation" : "subgroup") +
                         " loaded since the last barrier (a write-after-read race)",
           Rank::kMemory);
    return;
  }
  // Several readers: 0xFFF, the largest tag of this epoch (a max with 0 leaves the word as it is).
  const uint32_t several = fresh(), raise = fresh(), old = fresh();
  emit(to, spv::OpBitwiseOr, {uint_, several, hi, constant(uint_, 0xFFF)});
  emit(to, spv::OpSelect, {uint_, raise, race, several, constant(uint_, 0)});
  emit(to, spv::OpAtomicUMax, {uint_, old, rp, wg, relaxed, raise});
}

}  // namespace moe::vk::detail
