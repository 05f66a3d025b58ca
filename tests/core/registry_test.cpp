#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "op_registry.h"
#include "test_util.h"

namespace moe {
namespace {

TEST(registry, OneEntryPerOpListLineWithACheck) {
  std::set<std::string> seen;
  for (const OpInfo& op : op_registry()) {
    EXPECT_TRUE(seen.insert(op.stem).second) << "duplicate op " << op.stem;
    EXPECT_NE(op.check, nullptr) << op.stem;
    EXPECT_GT(std::string(op.summary).size(), 5u) << op.stem;
  }
  EXPECT_GE(seen.size(), 20u);
}

TEST(registry, EveryCheckRunsAndPassesOnRealShapes) {
  // The self-check of the README's main job, run as a test.
  for (const OpInfo& op : op_registry()) {
    SCOPED_TRACE(op.stem);
    test::expect_all_pass(op.check(99, CheckScope::Real));
  }
}

}  // namespace
}  // namespace moe
