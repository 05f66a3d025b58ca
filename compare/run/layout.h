// Buffers laid out the way an engine holds them (docs/manifests.md "Engine layouts"): a
// binding's views, packs, in-place results and scratch made concrete for one case, and the
// buffer images built from the op's tensors and read back into them.
//
// Units: a view's from/shape/strides/offset count elements of the view's type (4 bytes for
// f32/u32/i32, 2 for bf16/f16); an image is the buffer's bytes as 32-bit words (a 2-byte element
// e is half e % 2 of word e / 2, low half first, as HostTensor stores bf16 pairs).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compare/cases/cases.h"
#include "compare/manifest/manifest.h"

namespace moe::compare {

struct PlacedView {
  std::string tensor;       // the case's tensor (chain names translated); "" for a value or generated part
  std::string becomes;      // the case output this buffer holds here after the dispatch; "" none
  uint32_t value_bits = 0;  // a value part's 32 bits
  ElemType type = ElemType::F32;         // in the buffer
  ElemType tensor_type = ElemType::F32;  // of the op tensor; != type: converted exactly on upload
  // An f32 output the kernel stores as f16 (docs/manifests.md "f16 outputs"): never uploaded (f16
  // poison instead), read back widened exactly, and decided with the f16 rounding in the bound.
  bool narrowed = false;
  std::string what;                      // "<where> '<kernel>': binding 1", for messages
  // Generated parts: the expression, and per step of the case its values packed like a
  // HostTensor's words (row-major over the shape); step 0 from place_binding, the others added
  // by the caller.
  std::string generate;
  std::vector<std::vector<uint32_t>> generated;
  int64_t from = 0;                      // tensor element of index (0, ..., 0)
  std::vector<int64_t> shape, strides;   // buffer strides; defaults resolved
  std::vector<int64_t> tensor_strides;   // tensor strides; defaults resolved
  int64_t offset = 0;                    // buffer element of index (0, ..., 0)
  int64_t count() const;                 // elements taken
  // Calls f(t, e) for every index of the shape: tensor element t sits at buffer element e.
  void for_each(const std::function<void(int64_t t, int64_t e)>& f) const;
};

struct BufferLayout {
  uint64_t bytes = 0;        // the buffer's usable size
  bool plain = false;        // one op tensor, whole, in its own layout
  bool scratch = false;      // no op tensor: poisoned before every step, never compared
  uint32_t fill = 0;         // the 32-bit pattern where no view places an element
  std::vector<PlacedView> views;
  // Per 2-byte unit of the buffer: placed by some view (empty for plain and scratch buffers).
  std::vector<bool> covered;
  std::string key;  // identical layouts (same key) share one buffer within a plan
};

// Makes binding `b` of kernel `k` concrete for case `c`: `vars` are the instance's variables
// (op, device, lets), `rename` maps a kernel tensor name to the case's (chain stages). Throws
// moe::Error naming `where`, the kernel and the binding when a tensor or `becomes` target is
// not the op's, a type differs, a view takes elements outside its tensor or places them
// outside the buffer, or two placed elements overlap.
BufferLayout place_binding(const KernelEntry& k, const ManifestBinding& b,
                           const std::function<std::string(const std::string&)>& rename, const ExprVars& vars,
                           const OpCase& c, uint32_t poison, const std::string& where);

// Writes view `v`'s elements of `words` (the whole tensor's words; a generated part's values)
// into `image`, converted to the buffer's type where it differs (throws naming the element when
// a value is not exactly representable: check_conversion first); a value part writes its bits
// (words unused).
void write_view(const PlacedView& v, const std::vector<uint32_t>* words, std::vector<uint32_t>& image);
// Reads view `v`'s elements from `image` into `words` (the whole tensor's words, resized by the
// caller to the tensor's word count).
void read_view(const PlacedView& v, const std::vector<uint32_t>& image, std::vector<uint32_t>& words);
// A converted view's elements of `words` (the tensor's words as uploaded at some step, `when`
// says which, "" for the case's tensor) all exactly representable in the buffer's type; throws
// naming the view, the tensor, the element and its value otherwise.
void check_conversion(const PlacedView& v, const std::vector<uint32_t>& words, const std::string& when);
// The first 32-bit word of `image` holding a 2-byte unit no view covers that no longer equals the
// fill, or -1 (a kernel wrote outside its views).
int64_t first_gap_write(const BufferLayout& L, const std::vector<uint32_t>& image);

}  // namespace moe::compare
