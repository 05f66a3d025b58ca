// The fast tier's SIMD dispatch (core/simd.h): the targets this binary and CPU offer, pinning one
// (what `MOE_SIMD` and the tests' each_simd_target do), and a clear error for a name it lacks.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/simd.h"
#include "test_util.h"

namespace moe {
namespace {

TEST(Simd, OffersTargetsBestFirstAndPinsEach) {
  const std::vector<std::string> targets = simd_targets();
  ASSERT_FALSE(targets.empty());
  std::string list;
  for (const std::string& t : targets) list += " " + t;
  std::printf("SIMD targets of this binary on this CPU (best first):%s\n", list.c_str());  // for the record
  EXPECT_EQ(simd_target(), targets.front());  // unpinned: the best
  for (const std::string& t : targets) {
    simd_pin(t);
    EXPECT_EQ(simd_target(), t);
    EXPECT_EQ(simd_targets(), targets);  // the offer does not shrink while pinned
  }
  simd_pin("");
  EXPECT_EQ(simd_target(), targets.front());
}

TEST(Simd, UnknownTargetNamesWhatIsOfferedAndKeepsThePin) {
  const std::vector<std::string> targets = simd_targets();
  simd_pin(targets.back());
  test::expect_error([] { simd_pin("NO_SUCH_ISA"); }, "simd target 'NO_SUCH_ISA' is not one this binary and CPU offer: " + targets.front());
  EXPECT_EQ(simd_target(), targets.back());
  simd_pin("");
}

}  // namespace
}  // namespace moe
