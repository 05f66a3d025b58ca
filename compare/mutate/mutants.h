// Single-site mutants of a GLSL compute kernel (`moeoracle mutate`, design.md "The gate measures
// its own power"): each mutant is the kernel with one realistic bug planted at one place, by one
// rule of rules.def (a dropped addend, a wrong shift or mask, an off-by-one bound or index, a
// missing barrier, a sign or comparison flip, a wrong constant).
//
// Sites are found by a GLSL tokenizer: comments and preprocessor lines are skipped, and so are
// layout(...) qualifiers (workgroup sizes and bindings: the manifest and reflection decide those)
// and the sizes of array declarations (a shared array one element larger is no bug).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe::compare {

struct MutationRule {
  const char* name;
  const char* from;  // a token swap's token; "" for an edit
  const char* to;
  const char* klass;  // "sign", "bound", "compare", "shift", "mask", "logic", "dropped", "constant", "barrier", "index"
  const char* what;   // the bug it models
};
const std::vector<MutationRule>& mutation_rules();

struct Mutant {
  std::string rule;
  int line = 0, column = 0;  // 1-based, where the edit starts in the original source
  std::string before, after;  // the edited text, as it was and as it is (short, for reports)
  std::string source;         // the whole mutated source
  // "<line>:<column> <rule> '<before>' -> '<after>'": stable while the source does not change,
  // so equivalence claims (mutate --equivalent) can name a mutant.
  std::string id() const;
  // The original line and the mutated line, for a report ("- ...\n+ ...").
  std::string diff;
};

// Every mutant of `source` by every rule (in rule order, then source order). `rules` (optional)
// restricts to these rule names.
std::vector<Mutant> make_mutants(const std::string& source, const std::vector<std::string>& rules = {});

// At most `max` mutants, spread over the rules (round robin over rules in rule order, each rule's
// sites in a seeded random order): the same input, max and seed give the same selection.
std::vector<Mutant> sample_mutants(std::vector<Mutant> all, size_t max, uint64_t seed);

}  // namespace moe::compare
