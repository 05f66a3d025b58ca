// Declared differences (docs/manifests.md "Declared differences"): the data predicates a case
// offers to limits and to a difference's "when", and which of a kernel's differences hold.
#pragma once
#include <string>

#include "compare/cases/cases.h"
#include "compare/manifest/manifest.h"

namespace moe::compare {

// Adds, per input tensor t of the case (every tensor it uploads that is not a pure output, over
// the first contents and every step's uploads), the variables all_finite(t), any_nan(t),
// any_inf(t) (0 or 1) and max_abs(t) (the largest |x| over the elements that are not NaN; 0
// for a tensor of NaNs only; integer tensors by their values).
void add_data_vars(ExprVars& vars, const OpCase& c);
// The `why` of every difference of `k` whose `when` holds over `vars`, joined by "; " ("" when
// none holds). An expression that cannot be evaluated throws moe::Error naming `where`, the
// kernel and the difference.
std::string declared_difference(const KernelEntry& k, const ExprVars& vars, const std::string& where);

}  // namespace moe::compare
