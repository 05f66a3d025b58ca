// The manifest language for engines' own conventions (docs/manifests.md): push-constant members
// by path (nested structs, arrays, vectors); the "differences" key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "compare/manifest/manifest.h"
#include "core/check.h"

namespace moe::compare {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using test::error_of;

const std::string kData = std::string(MOE_SOURCE_DIR) + "/tests/compare/data/";

// Writes a one-kernel manifest around `kernel` into a per-test scratch folder; returns its path.
std::string write_manifest(const json& kernel, const std::string& name) {
  static test::Scratch dir("manifest_dialect");
  fs::create_directories(dir.dir);
  json j = {{"name", "dialect"}, {"version", 1}, {"kernels", json::array({kernel})}};
  std::string path = (dir.dir / (name + ".json")).string();
  std::ofstream(path) << j.dump(2);
  return path;
}

// The leaves of pc_nested.comp's block (std430), in declaration order: path, type, offset.
struct Leaf {
  const char* path;
  const char* type;
  uint32_t offset;
};
const Leaf kLeaves[] = {
    {"pc.rope_mode", "u32", 0},      {"pc.ncols", "u32", 4},          {"pc.corr_dims[0]", "f32", 8},
    {"pc.corr_dims[1]", "f32", 12},  {"pc.sections[0]", "i32", 16},   {"pc.sections[1]", "i32", 20},
    {"pc.sections[2]", "i32", 24},   {"pc.sections[3]", "i32", 28},   {"pc.m2[0][0]", "f32", 32},
    {"pc.m2[0][1]", "f32", 36},      {"pc.m2[0][2]", "f32", 40},      {"pc.m2[1][0]", "f32", 44},
    {"pc.m2[1][1]", "f32", 48},      {"pc.m2[1][2]", "f32", 52},      {"pc.in2[0].a", "u32", 56},
    {"pc.in2[0].b[0]", "f32", 60},   {"pc.in2[0].b[1]", "f32", 64},   {"pc.in2[1].a", "u32", 68},
    {"pc.in2[1].b[0]", "f32", 72},   {"pc.in2[1].b[1]", "f32", 76},   {"pc.v.x", "u32", 80},
    {"pc.v.y", "u32", 84},           {"tail", "u32", 88}};

// A kernel entry for pc_nested.comp declaring every leaf; leaf i gets the value i + 1.
json nested_kernel() {
  json pcs = json::array();
  int i = 0;
  for (const Leaf& l : kLeaves)
    pcs.push_back({{"name", l.path}, {"type", l.type}, {"offset", l.offset}, {"value", std::to_string(++i)}});
  return {{"name", "nested"},
          {"ops", {"residual_add", "rmsnorm"}},
          {"glsl", kData + "pc_nested.comp"},
          {"bindings", {{{"binding", 0}, {"tensor", "xy"}, {"access", "inout"}}}},
          {"push_constants", pcs},
          {"dispatch", {"1", "1", "1"}},
          {"subgroup_sizes", "any"}};
}

uint32_t word_at(const std::vector<uint8_t>& bytes, size_t offset) {
  uint32_t w = 0;
  std::memcpy(&w, bytes.data() + offset, 4);
  return w;
}

TEST(PushConstantPaths, NestedStructsArraysAndVectorsLoadAndFill) {
  Manifest m = load_manifest(write_manifest(nested_kernel(), "nested"));
  ASSERT_EQ(m.kernels[0].push_constant_size, 92u);
  KernelInstance in = instantiate(m.kernels[0], {}, m.path);
  ASSERT_EQ(in.push_constants.size(), 92u);
  int i = 0;
  for (const Leaf& l : kLeaves) {
    ++i;
    const uint32_t want = std::string(l.type) == "f32" ? std::bit_cast<uint32_t>(float(i)) : uint32_t(i);
    EXPECT_EQ(word_at(in.push_constants, l.offset), want) << l.path;
  }
}

TEST(PushConstantPaths, EveryLeafMustBeDeclared) {
  json k = nested_kernel();
  // Drop pc.m2[1][1] (index 12) and pc.in2[1].b[0] (index 18): both are listed.
  k["push_constants"].erase(18);
  k["push_constants"].erase(12);
  std::string m = error_of([&] { load_manifest(write_manifest(k, "missing")); });
  EXPECT_NE(m.find("push constant members \"pc.m2[1][1]\" (f32 @48), \"pc.in2[1].b[0]\" (f32 @72) of the shader's "
                   "push-constant block (92 bytes: pc.rope_mode u32 @0, pc.ncols u32 @4, pc.corr_dims[0] f32 @8"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("are not declared in the manifest"), std::string::npos) << m;
  EXPECT_NE(m.find("'nested'"), std::string::npos) << m;
}

TEST(PushConstantPaths, AFlatNameForANestedMemberNamesThePath) {
  json k = nested_kernel();
  k["push_constants"][0]["name"] = "rope_mode";
  std::string m = error_of([&] { load_manifest(write_manifest(k, "flat")); });
  EXPECT_NE(m.find("push_constants[0] \"rope_mode\" is not a member of the shader's push-constant block (92 bytes: "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("did you mean \"pc.rope_mode\"?"), std::string::npos) << m;
  // A path with the wrong index, offset or type is caught like a flat member's.
  k = nested_kernel();
  k["push_constants"][3]["name"] = "pc.corr_dims[2]";
  m = error_of([&] { load_manifest(write_manifest(k, "index")); });
  EXPECT_NE(m.find("\"pc.corr_dims[2]\" is not a member"), std::string::npos) << m;
  k = nested_kernel();
  k["push_constants"][9]["offset"] = 44;  // pc.m2[0][1] is at 36; 44 is pc.m2[1][0]'s, dropped
  k["push_constants"].erase(11);
  m = error_of([&] { load_manifest(write_manifest(k, "offset")); });
  EXPECT_NE(m.find("push constant \"pc.m2[0][1]\": manifest offset 44, shader offset 36"), std::string::npos) << m;
  k = nested_kernel();
  k["push_constants"][4]["type"] = "u32";  // pc.sections[0] is an int
  m = error_of([&] { load_manifest(write_manifest(k, "type")); });
  EXPECT_NE(m.find("push constant \"pc.sections[0]\": manifest type u32, shader type i32"), std::string::npos) << m;
}

TEST(PushConstantPaths, AMatrixIsRefused) {
  json k = nested_kernel();
  k["defines"] = {{"WITH_MATRIX", ""}};
  std::string m = error_of([&] { load_manifest(write_manifest(k, "matrix")); });
  EXPECT_NE(m.find("push-constant member \"pc.m\" is a matrix"), std::string::npos) << m;
}

TEST(PushConstantPaths, AStrippedModuleMatchesLeavesByOffset) {
  Manifest m = load_manifest(write_manifest(nested_kernel(), "stripped_src"));
  KernelEntry k = m.kernels[0];
  std::ifstream f(kData + "pc_nested.comp");
  const std::string source((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  k.spirv = compile_glsl(source, kData + "pc_nested.comp", k, /*optimize=*/true);
  for (auto& p : k.push_constants) p.name = "label_" + std::to_string(p.offset);  // names are labels now
  reflect_and_check(k, "stripped");
  EXPECT_EQ(k.push_constant_size, 92u);
  k.push_constants.pop_back();  // "tail" @88
  std::string e = error_of([&] { reflect_and_check(k, "stripped"); });
  EXPECT_NE(e.find("push constant member <unnamed> (u32 @88)"), std::string::npos) << e;
}

TEST(Differences, ManifestFieldsAreChecked) {
  struct Bad {
    json differences;
    const char* want;
  } bad[] = {
      {json::array({{{"when", "any_nan(xy)"}}}), "differences[0]: missing required key \"why\""},
      {json::array({{{"why", "x"}}}), "differences[0]: missing required key \"when\""},
      {json::array({{{"when", "any_nan(xy)"}, {"why", "x"}, {"if", "1"}}}), "differences[0]"},
      {json::array({{{"when", "any_nan(xy"}, {"why", "x"}}}), "differences[0].when: expression 'any_nan(xy'"},
      {json::array({{{"when", "1"}, {"why", ""}}}), "differences[0].why"},
      {json::object(), "differences: expected an array"},
  };
  for (const Bad& b : bad) {
    json k = nested_kernel();
    k["differences"] = b.differences;
    std::string m = error_of([&] { load_manifest(write_manifest(k, "differences")); });
    EXPECT_NE(m.find("'nested': "), std::string::npos) << m;
    EXPECT_NE(m.find(b.want), std::string::npos) << b.want << " -> " << m;
  }
  json k = nested_kernel();
  k["differences"] = json::array({{{"when", "any_nan(xy) || max_abs(xy) > 1e30"}, {"why", "an engine's NaN rule"}}});
  Manifest m = load_manifest(write_manifest(k, "differences_ok"));
  ASSERT_EQ(m.kernels[0].differences.size(), 1u);
  EXPECT_EQ(m.kernels[0].differences[0].why, "an engine's NaN rule");
}

TEST(SubgroupSizes, DriverIsTheDefault) {
  json k = nested_kernel();
  k.erase("subgroup_sizes");
  EXPECT_TRUE(load_manifest(write_manifest(k, "sg_default")).kernels[0].driver_subgroup);
  k["subgroup_sizes"] = "driver";
  EXPECT_TRUE(load_manifest(write_manifest(k, "sg_driver")).kernels[0].driver_subgroup);
  k["subgroup_sizes"] = "any";
  const KernelEntry any = load_manifest(write_manifest(k, "sg_any")).kernels[0];
  EXPECT_FALSE(any.driver_subgroup);
  EXPECT_TRUE(any.subgroup_sizes.empty());
  k["subgroup_sizes"] = {16, 32};
  const KernelEntry list = load_manifest(write_manifest(k, "sg_list")).kernels[0];
  EXPECT_FALSE(list.driver_subgroup);
  EXPECT_EQ(list.subgroup_sizes, (std::vector<uint32_t>{16, 32}));
  k["subgroup_sizes"] = "drivers";
  std::string m = error_of([&] { load_manifest(write_manifest(k, "sg_bad")); });
  EXPECT_NE(m.find("'nested': subgroup_sizes: expected \"driver\", \"any\" or an array of sizes, found \"drivers\""),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace moe::compare
