// Typed reads of parsed JSON (checkpoint configs, moeflux manifests, index and mapping files,
// case metadata): a value of the wrong type or out of range is a moe::Error naming `where` (the
// file and the key), never nlohmann's type_error, nor a float converted to an integer type it
// does not fit (undefined behaviour: nlohmann's get<int64_t>() on 1e300 does exactly that).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace moe {

// "integer 5", "string \"x\"": the value's kind and text, cut at 60 characters.
template <class Json>
std::string json_shown(const Json& j) {
  std::string text = j.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return std::string(j.is_number_integer() ? "integer" : j.type_name()) + " " + text;
}

// An integer in [lo, hi]: a JSON integer, or a number with an integral value (2048.0).
template <class Json>
int64_t json_int(const Json& j, const std::string& where, int64_t lo = std::numeric_limits<int64_t>::min(),
                 int64_t hi = std::numeric_limits<int64_t>::max()) {
  bool ok = false;
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    const uint64_t u = j.template get<uint64_t>();
    ok = u <= uint64_t(std::numeric_limits<int64_t>::max()), v = int64_t(u);
  } else if (j.is_number_integer()) {
    ok = true, v = j.template get<int64_t>();
  } else if (j.is_number_float()) {
    // +-2^63 are exact doubles; the open interval holds exactly the int64 values.
    const double d = j.template get<double>();
    ok = std::isfinite(d) && std::floor(d) == d && d > -9223372036854775808.0 && d < 9223372036854775808.0;
    if (ok) v = int64_t(d);
  }
  const bool any_lo = lo == std::numeric_limits<int64_t>::min(), any_hi = hi == std::numeric_limits<int64_t>::max();
  const std::string want = any_lo && any_hi ? "an integer"
                           : lo == 0 && any_hi ? "a non-negative integer"
                                               : "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  MOE_CHECK(ok && v >= lo && v <= hi, where << ": expected " << want << ", found " << json_shown(j));
  return v;
}

// A non-negative integer up to 2^64 - 1 (byte offsets and sizes).
template <class Json>
uint64_t json_uint(const Json& j, const std::string& where) {
  if (j.is_number_unsigned()) return j.template get<uint64_t>();
  return uint64_t(json_int(j, where, 0));
}

template <class Json>
double json_number(const Json& j, const std::string& where) {
  MOE_CHECK(j.is_number(), where << ": expected a number, found " << json_shown(j));
  return j.template get<double>();
}

template <class Json>
std::string json_string(const Json& j, const std::string& where) {
  MOE_CHECK(j.is_string(), where << ": expected a string, found " << json_shown(j));
  return j.template get<std::string>();
}

template <class Json>
bool json_bool(const Json& j, const std::string& where) {
  MOE_CHECK(j.is_boolean(), where << ": expected true or false, found " << json_shown(j));
  return j.template get<bool>();
}

}  // namespace moe
