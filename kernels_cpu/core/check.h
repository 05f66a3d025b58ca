// Always-on argument checks. A failed check throws moe::Error whose message names the op
// and the values involved; library code never aborts or exits, the CLI decides (exit 2).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace moe {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace moe

// MOE_CHECK(cond, "rmsnorm: x has " << n << " elements, expected " << m);
#define MOE_CHECK(cond, msg)                  \
  do {                                        \
    if (!(cond)) {                            \
      std::ostringstream moe_check_os_;       \
      moe_check_os_ << msg;                   \
      throw ::moe::Error(moe_check_os_.str()); \
    }                                         \
  } while (0)

#define MOE_FAIL(msg) MOE_CHECK(false, msg)
