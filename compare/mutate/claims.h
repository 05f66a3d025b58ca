// Equivalence claims (docs/mutate.md "Equivalence claims"): a surviving mutant that computes what
// the original does, argued in one line, is reported as equivalent rather than survived; a claim
// whose mutant is killed is reported as wrong. A claim may hold only on some devices ("when").
#pragma once

#include <string>

#include "compare/mutate/mutate.h"

namespace moe::compare {

// Applies the claims of one JSON text (`path` names it in errors): an array of {"kernel",
// "mutant" (its id), "why"[, "when": {"min_subgroup_size": N, "max_subgroup_size": N}]}. A
// conditional claim turns a survivor into an equivalent only when every case of the mutant ran
// inside its range, and is refuted only by a kill inside it.
void apply_claims_text(const std::string& path, const std::string& text, MutateReport& rep);

}  // namespace moe::compare
