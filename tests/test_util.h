// Helpers shared by the tests.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "core/check_util.h"

namespace moe::test {

// Every case of an op's three-way check passes; a failure prints the evidence.
inline void expect_all_pass(const std::vector<CheckResult>& results) {
  ASSERT_FALSE(results.empty());
  for (const CheckResult& r : results) {
    EXPECT_TRUE(r.ref32.pass()) << describe(r, r.ref32);
    EXPECT_TRUE(r.fast.pass()) << describe(r, r.fast);
  }
}

// `f` throws moe::Error whose message contains `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const moe::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message was: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected moe::Error containing '" << needle << "'";
}

}  // namespace moe::test
