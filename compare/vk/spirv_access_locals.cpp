// Uninitialised reads of private and local variables, at the read (Checker::prepare_locals in
// spirv_access_checker.h says how).
#include "compare/vk/spirv_access_checker.h"

namespace moe::vk::detail {

void Checker::prepare_locals() {
  std::map<uint32_t, uint32_t> storage, ptr_type;  // variable -> storage class, pointer type
  for (size_t i = 5; i < w_.size(); i += w_[i] >> 16)
    if ((w_[i] & 0xFFFFu) == spv::OpVariable && (w_[i] >> 16) >= 4 &&
        std::count(lim_.bare_vars.begin(), lim_.bare_vars.end(), w_[i + 2]) &&
        (w_[i + 3] == spv::StorageClassFunction || w_[i + 3] == spv::StorageClassPrivate))
      storage[w_[i + 2]] = w_[i + 3], ptr_type[w_[i + 2]] = w_[i + 1];
  std::map<uint32_t, size_t> levels;
  std::map<uint32_t, std::vector<uint32_t>> dims_of;
  for (const auto& [var, sc] : storage) {
    auto pt = type_.find(ptr_type[var]);
    if (pt == type_.end() || pt->second.op != spv::OpTypePointer) continue;
    std::vector<uint32_t> dims;
    uint64_t n = 1;
    for (auto at = type_.find(pt->second.a[1]); at != type_.end() && at->second.op == spv::OpTypeArray;
         at = type_.find(at->second.a[0]))
      dims.push_back(value_of(at->second.a[1])), n *= dims.back();
    if (n == 0 || n > 4096) continue;
    levels[var] = dims.size(), dims_of[var] = std::move(dims);
  }
  for (uint32_t var : fully_seen(levels, true)) {
    Local lv{.storage = storage[var], .dims = dims_of[var]};
    uint64_t n = 1;
    for (uint32_t d : lv.dims) n *= d;
    lv.words = uint32_t((n + 31) / 32);
    uint32_t type = uint_;
    if (lv.words > 1) type = fresh(), emit(globals_, spv::OpTypeArray, {type, uint_, constant(uint_, lv.words)});
    lv.ptr = fresh(), lv.null = fresh(), lv.shadow = fresh();
    emit(globals_, spv::OpTypePointer, {lv.ptr, lv.storage, type});
    emit(globals_, spv::OpConstantNull, {type, lv.null});
    if (lv.storage == spv::StorageClassPrivate) {
      emit(globals_, spv::OpVariable, {lv.ptr, lv.shadow, spv::StorageClassPrivate, lv.null});
      new_globals_.push_back(lv.shadow);
    }
    if (!ptr_uint_of_.count(lv.storage)) {
      const uint32_t p = fresh();
      emit(globals_, spv::OpTypePointer, {p, lv.storage, uint_});
      ptr_uint_of_[lv.storage] = p;
    }
    locals_[var] = std::move(lv);
  }
}

std::pair<uint32_t, uint32_t> Checker::local_bit(std::vector<uint32_t>& to, const Local& lv, uint32_t flat) {
  if (lv.words == 1) return {lv.shadow, flat};
  const uint32_t word = fresh(), p = fresh(), bit = fresh();
  emit(to, spv::OpShiftRightLogical, {uint_, word, flat, constant(uint_, 5)});
  emit(to, spv::OpAccessChain, {ptr_uint_of_.at(lv.storage), p, lv.shadow, word});
  emit(to, spv::OpBitwiseAnd, {uint_, bit, flat, constant(uint_, 31)});
  return {p, bit};
}

void Checker::local_read(std::vector<uint32_t>& to, uint32_t ptr) {
  auto e = local_elem_.find(ptr);
  auto whole = locals_.find(ptr);
  if (e == local_elem_.end() && (whole == locals_.end() || !whole->second.dims.empty())) return;
  const uint32_t var = e != local_elem_.end() ? e->second.first : ptr;
  const auto [wp, bit] = local_bit(to, locals_.at(var), e != local_elem_.end() ? e->second.second : constant(uint_, 0));
  const uint32_t word = fresh(), shifted = fresh(), one = fresh(), never = fresh();
  emit(to, spv::OpLoad, {uint_, word, wp});
  emit(to, spv::OpShiftRightLogical, {uint_, shifted, word, bit});
  emit(to, spv::OpBitwiseAnd, {uint_, one, shifted, constant(uint_, 1)});
  emit(to, spv::OpIEqual, {bool_, never, one, constant(uint_, 0)});
  record(to, never, name_of(var) + ": a load of an element this invocation never stored (an uninitialised " +
                        (locals_.at(var).storage == spv::StorageClassPrivate ? "private" : "local") + " variable)",
         Rank::kMemory);
}

void Checker::local_write(std::vector<uint32_t>& to, uint32_t ptr) {
  if (auto whole = locals_.find(ptr); whole != locals_.end()) {  // every element
    const Local& lv = whole->second;
    for (uint32_t k = 0; k < lv.words; ++k) {
      uint32_t wp = lv.shadow;
      if (lv.words > 1) wp = fresh(), emit(to, spv::OpAccessChain, {ptr_uint_of_.at(lv.storage), wp, lv.shadow, constant(uint_, k)});
      emit(to, spv::OpStore, {wp, constant(uint_, 0xFFFFFFFFu)});
    }
    return;
  }
  auto e = local_elem_.find(ptr);
  if (e == local_elem_.end()) return;
  const auto [wp, bit] = local_bit(to, locals_.at(e->second.first), e->second.second);
  const uint32_t word = fresh(), mask = fresh(), set = fresh();
  emit(to, spv::OpLoad, {uint_, word, wp});
  emit(to, spv::OpShiftLeftLogical, {uint_, mask, constant(uint_, 1), bit});
  emit(to, spv::OpBitwiseOr, {uint_, set, word, mask});
  emit(to, spv::OpStore, {wp, set});
}

}  // namespace moe::vk::detail
