// Declared differences (docs/manifests.md "Declared differences"): the data predicates a case
// offers to limits and to a difference's "when", and which of a kernel's differences hold.
#pragma once
#include <string>
#include <vector>

#include "compare/cases/cases.h"
#include "compare/manifest/manifest.h"
#include "compare/run/plan.h"

namespace moe::compare {

// Adds, per input tensor t of the case (every tensor it uploads that is not a pure output, over
// the first contents and every step's uploads), the variables all_finite(t), any_nan(t),
// any_inf(t) (0 or 1) and max_abs(t) (the largest |x| over the elements that are not NaN; 0
// for a tensor of NaNs only; integer tensors by their values).
void add_data_vars(ExprVars& vars, const OpCase& c);
// Whether every input tensor of the case (as add_data_vars reads them) holds finite values only.
bool inputs_all_finite(const OpCase& c);
// Whether some limit or difference of a kernel of the plan (any alternative) reads a data
// predicate (the harness computes them only then: a pass over every input of a large case is
// not free).
bool reads_data_predicates(const Plan& plan);
// The `why` of every difference of the case's kernels whose `when` holds at some step (over that
// kernel's instance's variables, inst[step][kernel]), each once, joined by "; " ("" when none
// holds). An expression that cannot be evaluated throws moe::Error naming `where`, the kernel
// and the difference.
std::string declared_difference(const std::vector<const KernelEntry*>& kernels,
                                const std::vector<std::vector<KernelInstance>>& inst, const std::string& where);

}  // namespace moe::compare
