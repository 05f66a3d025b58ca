// Mutant generation (compare/mutate/mutants.h): each rule plants its edit at the right sites and
// nowhere else (not in comments, preprocessor lines, layout qualifiers or declared array sizes).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "compare/mutate/mutants.h"

namespace moe::compare {
namespace {

const char* kSrc = R"(#version 450
#define N 64
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer B { float y[]; };
shared float part[256];
shared FLOAT_TYPE sums[N];
// a comment with a + b and x[i]
void main() {
  uint i = gl_LocalInvocationID.x;
  float s = fma(y[i], 2.0, -y[i + 1u]);
  part[i] = s;
  barrier();
  if (i < 128u && i >= 2) s += part[i >> 1] * min(s, 1e-6);
  y[i] = s - part[0];
}
)";

std::vector<std::string> ids(const std::string& rule) {
  std::vector<std::string> out;
  for (const Mutant& m : make_mutants(kSrc, {rule})) out.push_back(m.id());
  return out;
}

TEST(Mutants, TokenSwapsOnlyInCode) {
  // The + in the comment and the index's + are code only once (y[i + 1u]); binary only.
  EXPECT_EQ(ids("add_to_sub"), std::vector<std::string>{"10:33 add_to_sub '+' -> '-'"});
  // The unary minus of -y[...] is no subtraction; y[i] = s - part[0] is.
  EXPECT_EQ(ids("sub_to_add"), std::vector<std::string>{"14:12 sub_to_add '-' -> '+'"});
  EXPECT_EQ(ids("lt_to_le"), std::vector<std::string>{"13:9 lt_to_le '<' -> '<='"});
  EXPECT_EQ(ids("shr_to_shl"), std::vector<std::string>{"13:39 shr_to_shl '>>' -> '<<'"});
  EXPECT_EQ(ids("accumulate_to_assign"), std::vector<std::string>{"13:29 accumulate_to_assign '+=' -> '='"});
  EXPECT_EQ(ids("min_to_max"), std::vector<std::string>{"13:47 min_to_max 'min' -> 'max'"});
}

TEST(Mutants, EditsNeedTheirContext) {
  // Integer constants: not the #define, not the layout sizes and bindings, not part[256]'s size.
  const std::vector<std::string> ints = ids("int_plus_one");
  EXPECT_EQ(ints.size(), 5u);  // 1u, 128u, 2, 1 (i >> 1), 0 (part[0])
  EXPECT_NE(std::find(ints.begin(), ints.end(), "10:35 int_plus_one '1u' -> '2u'"), ints.end());
  EXPECT_EQ(ids("int_minus_one").size(), 4u);  // not 0 - 1
  EXPECT_EQ(ids("float_doubled"), (std::vector<std::string>{"10:23 float_doubled '2.0' -> '4.0'",
                                                             "13:54 float_doubled '1e-6' -> '2e-06'"}));
  EXPECT_EQ(ids("drop_barrier"), std::vector<std::string>{"12:3 drop_barrier 'barrier();' -> ''"});
  EXPECT_EQ(ids("fma_drop_addend"),
            std::vector<std::string>{"10:13 fma_drop_addend 'fma(y[i], 2.0, -y[i + 1u])' -> '((y[i]) * (2.0))'"});
  EXPECT_EQ(ids("drop_negation"), std::vector<std::string>{"10:28 drop_negation '-' -> ''"});
  // Subscripts of expressions, not the declaration part[256].
  EXPECT_EQ(ids("index_plus_one").size(), 6u);
}

TEST(Mutants, MutantsCompileToTheirSource) {
  for (const Mutant& m : make_mutants(kSrc)) {
    EXPECT_NE(m.source, kSrc) << m.id();
    EXPECT_EQ(m.diff.rfind("- ", 0), 0u);
  }
}

TEST(Mutants, SampleSpreadsOverRulesAndIsDeterministic) {
  const std::vector<Mutant> all = make_mutants(kSrc);
  const std::vector<Mutant> a = sample_mutants(all, 10, 7), b = sample_mutants(all, 10, 7);
  ASSERT_EQ(a.size(), 10u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].id(), b[i].id());
  std::set<std::string> rules;
  for (const Mutant& m : a) rules.insert(m.rule);
  EXPECT_EQ(rules.size(), 10u);  // ten different rules before any rule repeats
  EXPECT_EQ(sample_mutants(all, 0, 7).size(), all.size());
}

}  // namespace
}  // namespace moe::compare
