// The ggml tensor types a GGUF file may hold, and GgufValue's helpers. Block sizes and bytes per
// block are ggml's public layout facts (ggml-common.h's block structs; QK_K = 256).
#include <cstdio>
#include <cstring>

#include "oracle/gguf.h"

namespace moe {
namespace {

constexpr GgmlType kTypes[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},
    {2, "q4_0", 32, 18},      {3, "q4_1", 32, 20},
    {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},
    {10, "q2_K", 256, 84},    {11, "q3_K", 256, 110},
    {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},
    {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
    {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},
    {22, "iq2_s", 256, 82},   {23, "iq4_xs", 256, 136},
    {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},
    {28, "f64", 1, 8},        {29, "iq1_m", 256, 56},
    {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
    {40, "nvfp4", 64, 36},    {41, "q1_0", 128, 18},
    {42, "q2_0", 64, 18},
};

}  // namespace

const GgmlType* ggml_type(uint32_t id) {
  for (const GgmlType& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

const GgmlType* ggml_type_named(const std::string& name) {
  for (const GgmlType& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

const char* gguf_type_name(GgufType t) {
  static const char* const names[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};
  const auto k = uint32_t(t);
  return k < std::size(names) ? names[k] : "?";
}

GgufValue GgufValue::of_u32(uint32_t v) { return GgufValue{.type = GgufType::U32, .u = v, .i = int64_t(v)}; }
GgufValue GgufValue::of_u64(uint64_t v) {
  return GgufValue{.type = GgufType::U64, .u = v, .i = v <= uint64_t(INT64_MAX) ? int64_t(v) : -1};
}
GgufValue GgufValue::of_i32(int32_t v) {
  return GgufValue{.type = GgufType::I32, .u = v >= 0 ? uint64_t(v) : 0, .i = v};
}
GgufValue GgufValue::of_f32(float v) { return GgufValue{.type = GgufType::F32, .f = v}; }
GgufValue GgufValue::of_bool(bool v) { return GgufValue{.type = GgufType::BOOL, .b = v}; }
GgufValue GgufValue::of_string(std::string v) { return GgufValue{.type = GgufType::STRING, .s = std::move(v)}; }
GgufValue GgufValue::array_of(GgufType elem, std::vector<GgufValue> items) {
  return GgufValue{.type = GgufType::ARRAY, .elem = elem, .items = std::move(items)};
}

std::string GgufValue::summary(size_t max_items) const {
  char buf[64];
  switch (type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
      return std::string(gguf_type_name(type)) + " " + std::to_string(u);
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64:
      return std::string(gguf_type_name(type)) + " " + std::to_string(i);
    case GgufType::F32: case GgufType::F64:
      std::snprintf(buf, sizeof buf, "%.9g", f);
      return std::string(gguf_type_name(type)) + " " + buf;
    case GgufType::BOOL: return b ? "bool true" : "bool false";
    case GgufType::STRING: {
      std::string q = s.size() > 80 ? s.substr(0, 77) + "..." : s;
      return "string \"" + q + "\"";
    }
    case GgufType::ARRAY: {
      std::string out = std::string("array<") + gguf_type_name(elem) + ">[" + std::to_string(items.size()) + "]";
      for (size_t k = 0; k < items.size() && k < max_items; ++k) {
        std::string one = items[k].summary(0);
        out += (k ? ", " : " ") + one.substr(one.find(' ') + 1);
      }
      if (items.size() > max_items && max_items) out += ", ...";
      return out;
    }
  }
  return "?";
}

}  // namespace moe
