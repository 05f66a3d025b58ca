// Undefined local values made visible (see runner_internal.h, poison_locals): every Function- or
// Private-storage OpVariable declared without an initializer gets one, filled with a poison
// pattern. GLSL leaves `float acc;` undefined until written; a driver typically makes that 0 (LLVM's
// undef on lavapipe), so a kernel that forgets to zero an accumulator passes there and fails on a
// GPU whose register held something else. With the poison a float reads as a NaN, an integer as
// 0xFEFEFEFE (a huge index or count), a bool as true. A kernel that writes before it reads, as
// every correct one does, cannot tell: the initial store is dead and the driver drops it.
#include <cstring>
#include <map>
#include <vector>

#include "compare/vk/runner_internal.h"
#include "core/check.h"

namespace moe::vk::detail {
namespace {

enum : uint32_t {
  kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeMatrix = 24,
  kOpTypeArray = 28, kOpTypeStruct = 30, kOpTypePointer = 32, kOpConstantTrue = 41, kOpConstant = 43,
  kOpConstantComposite = 44, kOpSpecConstant = 50, kOpSpecConstantOp = 52, kOpFunction = 54, kOpVariable = 59,
  kOpDecorate = 71,
};
constexpr uint32_t kSpecId = 1;  // Decoration SpecId
constexpr uint32_t kPrivate = 6, kFunction = 7;
// One instruction holds at most 65535 words: an array constant lists every element.
constexpr size_t kMaxElements = 65000;

class Poisoner {
 public:
  Poisoner(std::span<const uint32_t> w, const std::string& label, const std::vector<SpecConstant>& spec)
      : w_(w), label_(label), spec_(spec), bound_(w[3]) {}

  std::vector<uint32_t> run() {
    scan_globals();
    std::vector<uint32_t> out(w_.begin(), w_.begin() + 5);
    bool in_functions = false;
    for (size_t i = 5; i < w_.size();) {
      const uint32_t count = w_[i] >> 16, op = w_[i] & 0xFFFFu;
      if (op == kOpFunction && !in_functions) {
        // Constants live in the global section: make those of every local's type before the
        // first function.
        in_functions = true;
        for (size_t j = i; j < w_.size(); j += w_[j] >> 16)
          if ((w_[j] & 0xFFFFu) == kOpVariable && (w_[j] >> 16) == 4 && w_[j + 3] == kFunction)
            poison_of(pointee(w_[j + 1]));
        flush(out);
      }
      const bool bare_var = op == kOpVariable && count == 4 && (w_[i + 3] == kFunction || w_[i + 3] == kPrivate);
      const uint32_t init = bare_var ? poison_of(pointee(w_[i + 1])) : 0;
      if (!in_functions) flush(out);  // a Private variable's constant goes right before it
      if (init) {
        out.push_back((5u << 16) | kOpVariable);
        out.insert(out.end(), &w_[i + 1], &w_[i + 4]);
        out.push_back(init);
        ++poisoned_;
      } else {
        out.insert(out.end(), &w_[i], &w_[i + count]);
      }
      i += count;
    }
    out[3] = bound_;
    return poisoned_ ? out : std::vector<uint32_t>(w_.begin(), w_.end());
  }

 private:
  struct Type {
    uint32_t op;
    std::vector<uint32_t> operands;  // after the result id
  };

  // Types, pointer targets and 32-bit scalar constants (array lengths), from the global section.
  void scan_globals() {
    for (size_t i = 5; i < w_.size();) {
      const uint32_t count = w_[i] >> 16, op = w_[i] & 0xFFFFu;
      MOE_CHECK(count > 0 && i + count <= w_.size(), "vulkan: " << label_ << ": malformed SPIR-V at word " << i);
      if (op == kOpFunction) break;
      const uint32_t* a = &w_[i + 1];
      if ((op >= kOpTypeBool && op <= kOpTypeMatrix) || op == kOpTypeArray || op == kOpTypeStruct)
        types_[a[0]] = {op, std::vector<uint32_t>(a + 1, a + count - 1)};
      else if (op == kOpTypePointer && count == 4)
        pointee_[a[0]] = a[2];
      else if ((op == kOpConstant || op == kOpSpecConstant) && count == 4)
        scalar_[a[1]] = a[2];
      else if (op == kOpDecorate && count == 4 && a[1] == kSpecId)
        spec_id_[a[0]] = a[2];
      else if (op == kOpSpecConstantOp && count == 6)  // type, id, opcode, two operands
        spec_op_[a[1]] = {a[2], a[3], a[4]};
      i += count;
    }
    // A specialization constant's length is the dispatch's value (the module is made per
    // pipeline, whose key holds the specialization), or its default.
    for (const auto& [id, sid] : spec_id_)
      for (const SpecConstant& c : spec_)
        if (c.id == sid && scalar_.count(id)) scalar_[id] = c.value;
    // Lengths computed from them (float acc[R * TT]): integer OpSpecConstantOps, whose operands
    // may be such ops too: evaluated until nothing changes.
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [id, o] : spec_op_)
        if (uint32_t v = 0; !scalar_.count(id) && eval(o, v)) scalar_[id] = v, changed = true;
    }
  }

  struct SpecOp {
    uint32_t opcode, x, y;  // operand ids
  };
  bool eval(const SpecOp& o, uint32_t& v) const {
    auto a = scalar_.find(o.x), b = scalar_.find(o.y);
    if (a == scalar_.end() || b == scalar_.end()) return false;
    const uint32_t x = a->second, y = b->second;
    return spec_int_op(o.opcode, x, y, v);
  }

  uint32_t pointee(uint32_t pointer_type) const {
    auto it = pointee_.find(pointer_type);
    return it == pointee_.end() ? 0 : it->second;
  }

  // The id of a poison constant of `type` (made on first use, queued for flush), or 0 where the
  // type has none (pointers, images, arrays of lengths eval() cannot compute, huge arrays).
  uint32_t poison_of(uint32_t type) {
    if (auto it = made_.find(type); it != made_.end()) return it->second;
    uint32_t id = 0;
    if (auto t = types_.find(type); t != types_.end()) id = make(type, t->second);
    made_[type] = id;
    return id;
  }

  uint32_t make(uint32_t type, const Type& t) {
    const std::vector<uint32_t>& a = t.operands;
    if (t.op == kOpTypeBool) return emit(kOpConstantTrue, type, {});
    if (t.op == kOpTypeInt && a.size() == 2) return emit(kOpConstant, type, int_poison(a[0], a[1] != 0));
    if (t.op == kOpTypeFloat && !a.empty()) return emit(kOpConstant, type, float_poison(a[0]));
    std::vector<uint32_t> parts;
    if ((t.op == kOpTypeVector || t.op == kOpTypeMatrix) && a.size() == 2) {
      parts.assign(a[1], poison_of(a[0]));
    } else if (t.op == kOpTypeArray && a.size() == 2) {
      auto n = scalar_.find(a[1]);  // not found: a length of a form eval() does not know
      if (n == scalar_.end() || n->second == 0 || n->second > kMaxElements) return 0;
      parts.assign(n->second, poison_of(a[0]));
    } else if (t.op == kOpTypeStruct && !a.empty()) {
      for (uint32_t member : a) parts.push_back(poison_of(member));
    } else {
      return 0;
    }
    for (uint32_t p : parts)
      if (p == 0) return 0;
    return emit(kOpConstantComposite, type, parts);
  }

  static std::vector<uint32_t> int_poison(uint32_t width, bool is_signed) {
    constexpr uint32_t kPattern = 0xFEFEFEFEu;
    if (width == 64) return {kPattern, kPattern};
    uint32_t v = width >= 32 ? kPattern : kPattern & ((1u << width) - 1u);
    // Narrow constants are stored sign-extended (signed) or zero-extended (unsigned).
    if (is_signed && width < 32 && (v >> (width - 1)) & 1u) v |= ~((1u << width) - 1u);
    return {v};
  }

  static std::vector<uint32_t> float_poison(uint32_t width) {
    if (width == 16) return {0x7E01u};
    if (width == 64) return {0x0000DEADu, 0x7FF80000u};
    return {0x7FC0DEADu};  // a quiet NaN; the outputs' "unwritten" pattern is 0x7FC00BAD
  }

  uint32_t emit(uint32_t op, uint32_t type, const std::vector<uint32_t>& values) {
    const uint32_t id = bound_++;
    pending_.push_back(uint32_t(3 + values.size()) << 16 | op);
    pending_.push_back(type);
    pending_.push_back(id);
    pending_.insert(pending_.end(), values.begin(), values.end());
    return id;
  }

  void flush(std::vector<uint32_t>& out) {
    out.insert(out.end(), pending_.begin(), pending_.end());
    pending_.clear();
  }

  std::span<const uint32_t> w_;
  const std::string& label_;
  const std::vector<SpecConstant>& spec_;
  uint32_t bound_;
  std::map<uint32_t, Type> types_;
  std::map<uint32_t, uint32_t> pointee_, scalar_, spec_id_, made_;
  std::map<uint32_t, SpecOp> spec_op_;
  std::vector<uint32_t> pending_;
  int poisoned_ = 0;
};

}  // namespace

std::vector<uint32_t> poison_locals(std::span<const uint32_t> words, const std::string& label,
                                    const std::vector<SpecConstant>& spec) {
  MOE_CHECK(words.size() >= 5 && words[0] == 0x07230203u,
            "vulkan: " << label << ": not SPIR-V (" << words.size() << " words)");
  return Poisoner(words, label, spec).run();
}

std::vector<uint32_t> bare_variables(std::span<const uint32_t> words) {
  std::vector<uint32_t> out;
  for (size_t i = 5; i < words.size() && (words[i] >> 16);) {
    const uint32_t count = words[i] >> 16;
    if ((words[i] & 0xFFFFu) == kOpVariable && count == 4 && (words[i + 3] == kFunction || words[i + 3] == kPrivate))
      out.push_back(words[i + 2]);
    i += count;
  }
  return out;
}

}  // namespace moe::vk::detail
