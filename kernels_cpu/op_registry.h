// The ops of op_list.def, in order, with their self-checks.
#pragma once
#include <span>

#include "core/check_util.h"

namespace moe {

struct OpInfo {
  const char* stem;
  const char* summary;
  CheckFn check;
};

std::span<const OpInfo> op_registry();

}  // namespace moe
