// CaseResult <-> JSON, lossless (every field, doubles bit-exact, NaN and infinities as strings):
// how an isolated worker (compare/run/isolate.h) hands its results to the parent process. Not
// the --json report format (report.h), which is for people and tools and leaves fields out.
#pragma once
#include <nlohmann/json.hpp>

#include "compare/report/report.h"

namespace moe::compare {

nlohmann::json result_to_json(const CaseResult& r);
// Throws moe::Error naming the missing or mistyped field.
CaseResult result_from_json(const nlohmann::json& j);

}  // namespace moe::compare
