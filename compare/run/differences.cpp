// Declared differences and the data predicates (differences.h).
#include "compare/run/differences.h"
#include "compare/run/elem_convert.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"

namespace moe::compare {

namespace {

struct TensorFacts {
  bool any_nan = false, any_inf = false;
  double max_abs = 0;
  void add(double x) {
    if (std::isnan(x)) {
      any_nan = true;
      return;
    }
    any_inf = any_inf || std::isinf(x);
    max_abs = std::max(max_abs, std::fabs(x));
  }
};

// The words as the tensor's elements (bf16: element 2i in the low half of word i).
void add_words(TensorFacts& f, const HostTensor& t) {
  const int64_t n = t.elems;
  for (int64_t e = 0; e < n; ++e) {
    if (t.type == ElemType::BF16 || t.type == ElemType::F16) {
      const size_t w = size_t(e / 2);
      if (w >= t.words.size()) break;
      const uint32_t half = (e % 2 == 0) ? (t.words[w] & 0xffffu) : (t.words[w] >> 16);
      f.add(unit_value(half, t.type));
      continue;
    }
    if (size_t(e) >= t.words.size()) break;
    const uint32_t w = t.words[size_t(e)];
    if (t.type == ElemType::F32) f.add(std::bit_cast<float>(w));
    else if (t.type == ElemType::I32) f.add(std::bit_cast<int32_t>(w));
    else f.add(w);  // u32
  }
}

// The facts of input tensor `name` over its first contents and every step's uploads.
TensorFacts input_facts(const OpCase& c, const std::string& name, const HostTensor& t) {
  TensorFacts f;
  add_words(f, t);
  for (const CaseStep& s : c.steps) {
    auto it = s.upload.find(name);
    if (it != s.upload.end()) add_words(f, it->second);
  }
  return f;
}

}  // namespace

bool inputs_all_finite(const OpCase& c) {
  for (const auto& [name, t] : c.tensors) {
    if (t.output) continue;
    const TensorFacts f = input_facts(c, name, t);
    if (f.any_nan || f.any_inf) return false;
  }
  return true;
}

void add_data_vars(ExprVars& vars, const OpCase& c) {
  for (const auto& [name, t] : c.tensors) {
    if (t.output) continue;  // the op's result, not an input
    const TensorFacts f = input_facts(c, name, t);
    vars[data_predicate_var("all_finite", name)] = !f.any_nan && !f.any_inf;
    vars[data_predicate_var("any_nan", name)] = f.any_nan;
    vars[data_predicate_var("any_inf", name)] = f.any_inf;
    vars[data_predicate_var("max_abs", name)] = f.max_abs;
  }
}

bool reads_data_predicates(const Plan& plan) {
  const auto reads = [](const KernelEntry* k) {
    std::vector<std::string> exprs = k->limits;
    for (const Difference& d : k->differences) exprs.push_back(d.when);
    for (const std::string& e : exprs)
      for (const char* p : {"all_finite", "any_nan", "any_inf", "max_abs"})
        if (e.find(p) != std::string::npos) return true;  // a name containing one only costs time
    return false;
  };
  for (const KernelEntry* k : plan.kernels)
    if (reads(k)) return true;
  for (const auto& alts : plan.alternatives)
    for (const KernelEntry* k : alts)
      if (reads(k)) return true;
  return false;
}

std::string declared_difference(const std::vector<const KernelEntry*>& kernels,
                                const std::vector<std::vector<KernelInstance>>& inst, const std::string& where) {
  std::string why;
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t i = 0; i < kernels[k]->differences.size(); ++i) {
      const Difference& d = kernels[k]->differences[i];
      bool holds = false;
      for (size_t s = 0; s < inst.size() && !holds; ++s) {
        try {
          holds = eval_limit(d.when, inst[s][k].vars, nullptr);
        } catch (const Error& e) {
          MOE_FAIL(where << " '" << kernels[k]->name << "': differences[" << i << "].when: " << e.what());
        }
      }
      if (holds && why.find(d.why) == std::string::npos) why += (why.empty() ? "" : "; ") + d.why;
    }
  return why;
}

}  // namespace moe::compare
