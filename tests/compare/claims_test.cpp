// Equivalence claims (compare/mutate/claims.h): a claim turns its survivor into an equivalent, a
// kill refutes it, and a conditional claim ("when" a subgroup-size range) does either only where
// every case of the mutant ran inside its range.
#include <gtest/gtest.h>

#include "compare/mutate/claims.h"
#include "core/check.h"

namespace moe::compare {
namespace {

// A report holding one mutant of kernel "k": its id "3:7 add_to_sub '+' -> '-'".
MutateReport one(MutantStatus status, uint32_t min_sg, uint32_t max_sg) {
  MutantResult r;
  r.kernel = "k";
  r.mutant.rule = "add_to_sub", r.mutant.line = 3, r.mutant.column = 7, r.mutant.before = "+", r.mutant.after = "-";
  r.status = status, r.criterion = status == MutantStatus::Killed ? "element" : "";
  r.min_subgroup = min_sg, r.max_subgroup = max_sg;
  MutateReport rep;
  rep.mutants.push_back(r);
  return rep;
}

const char* kPlain = R"([{"kernel": "k", "mutant": "3:7 add_to_sub '+' -> '-'", "why": "adds zero"}])";
const char* kAtLeast16 =
    R"([{"kernel": "k", "mutant": "3:7 add_to_sub '+' -> '-'", "why": "one pass", "when": {"min_subgroup_size": 16}}])";

TEST(Claims, PlainClaimMakesTheSurvivorEquivalent) {
  MutateReport rep = one(MutantStatus::Survived, 8, 8);
  apply_claims_text("c.json", kPlain, rep);
  EXPECT_EQ(rep.mutants[0].status, MutantStatus::Equivalent);
  EXPECT_EQ(rep.mutants[0].why, "adds zero");
  EXPECT_TRUE(rep.wrong_claims.empty());
}

// A claim may name several units (a shared file's mutant, run as one kernel or as the file).
TEST(Claims, ClaimOfSeveralUnitsAppliesToEach) {
  MutateReport rep = one(MutantStatus::Survived, 8, 8);
  apply_claims_text("c.json", R"([{"kernel": ["f.comp", "k"], "mutant": "3:7 add_to_sub '+' -> '-'", "why": "adds zero"}])",
                    rep);
  EXPECT_EQ(rep.mutants[0].status, MutantStatus::Equivalent);
  MutateReport killed = one(MutantStatus::Killed, 8, 8);
  apply_claims_text("c.json", R"([{"kernel": ["f.comp", "k"], "mutant": "3:7 add_to_sub '+' -> '-'", "why": "w"}])",
                    killed);
  EXPECT_EQ(killed.wrong_claims.size(), 1u);
}

TEST(Claims, KillRefutesAPlainClaim) {
  MutateReport rep = one(MutantStatus::Killed, 8, 8);
  apply_claims_text("c.json", kPlain, rep);
  EXPECT_EQ(rep.mutants[0].status, MutantStatus::Killed);
  ASSERT_EQ(rep.wrong_claims.size(), 1u);
  EXPECT_NE(rep.wrong_claims[0].find("killed by element"), std::string::npos) << rep.wrong_claims[0];
}

TEST(Claims, ConditionalClaimAppliesOnlyInsideItsRange) {
  MutateReport inside = one(MutantStatus::Survived, 16, 32);
  apply_claims_text("c.json", kAtLeast16, inside);
  EXPECT_EQ(inside.mutants[0].status, MutantStatus::Equivalent);
  EXPECT_NE(inside.mutants[0].why.find("subgroup size >= 16"), std::string::npos) << inside.mutants[0].why;

  // One case at subgroup 8: the argument does not cover it, the mutant stays a survivor.
  MutateReport straddles = one(MutantStatus::Survived, 8, 32);
  apply_claims_text("c.json", kAtLeast16, straddles);
  EXPECT_EQ(straddles.mutants[0].status, MutantStatus::Survived);

  // Unknown subgroup sizes (0): never inside a range.
  MutateReport unknown = one(MutantStatus::Survived, 0, 0);
  apply_claims_text("c.json", kAtLeast16, unknown);
  EXPECT_EQ(unknown.mutants[0].status, MutantStatus::Survived);
}

TEST(Claims, ConditionalClaimIsRefutedOnlyByAKillInsideItsRange) {
  MutateReport outside = one(MutantStatus::Killed, 8, 8);
  apply_claims_text("c.json", kAtLeast16, outside);
  EXPECT_TRUE(outside.wrong_claims.empty());

  MutateReport inside = one(MutantStatus::TimedOut, 32, 32);
  apply_claims_text("c.json", kAtLeast16, inside);
  EXPECT_EQ(inside.wrong_claims.size(), 1u);

  const char* at_most_8 =
      R"([{"kernel": "k", "mutant": "3:7 add_to_sub '+' -> '-'", "why": "w", "when": {"max_subgroup_size": 8}}])";
  MutateReport small = one(MutantStatus::Killed, 4, 4);
  apply_claims_text("c.json", at_most_8, small);
  EXPECT_EQ(small.wrong_claims.size(), 1u);
}

TEST(Claims, ClaimOfAMutantNotGeneratedIsIgnored) {
  MutateReport rep = one(MutantStatus::Survived, 8, 8);
  apply_claims_text("c.json", R"([{"kernel": "other", "mutant": "3:7 add_to_sub '+' -> '-'", "why": "w"}])", rep);
  EXPECT_EQ(rep.mutants[0].status, MutantStatus::Survived);
  EXPECT_TRUE(rep.wrong_claims.empty());
}

TEST(Claims, MalformedClaimsNameTheFileAndWhatIsWrong) {
  MutateReport rep = one(MutantStatus::Survived, 8, 8);
  const auto message = [&](const char* text) {
    try {
      apply_claims_text("claims/x.json", text, rep);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("[{").find("claims/x.json: malformed JSON"), std::string::npos);
  EXPECT_NE(message(R"({"kernel": "k"})").find("expected an array"), std::string::npos);
  EXPECT_NE(message(R"([{"kernel": "k", "mutant": "m"}])").find("\"why\""), std::string::npos);
  // A misspelt condition fails even for a claim whose mutant this run did not generate.
  const std::string bad = message(
      R"([{"kernel": "zz", "mutant": "m", "why": "w", "when": {"min_subgroup": 16}}])");
  EXPECT_NE(bad.find("claims/x.json"), std::string::npos) << bad;
  EXPECT_NE(bad.find("min_subgroup_size"), std::string::npos) << bad;
  EXPECT_NE(message(R"([{"kernel": "k", "mutant": "m", "why": "w", "when": {"min_subgroup_size": -1}}])")
                .find("unsigned"),
            std::string::npos);
  EXPECT_NE(message(R"([{"kernel": 7, "mutant": "m", "why": "w"}])").find("a unit name or a list"), std::string::npos);
  EXPECT_NE(message(R"([{"kernel": [], "mutant": "m", "why": "w"}])").find("a unit name or a list"), std::string::npos);
  EXPECT_NE(message(R"([{"kernel": ["k", 7], "mutant": "m", "why": "w"}])").find("a unit name or a list"),
            std::string::npos);
  // A good claim before a bad one is not applied either: a failed file changes nothing.
  message(R"([{"kernel": "k", "mutant": "3:7 add_to_sub '+' -> '-'", "why": "w"},
             {"kernel": "k", "mutant": "m", "why": "w", "when": {"max_subgroup_size": "32"}}])");
  EXPECT_EQ(rep.mutants[0].status, MutantStatus::Survived);
}

}  // namespace
}  // namespace moe::compare
