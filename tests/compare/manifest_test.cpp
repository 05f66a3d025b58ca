// Kernel manifests: the valid fixtures load (SPIR-V and GLSL) with their reflection filled in, and
// each kind of mismatch gives its precise message naming the file, the kernel, the binding or
// member and both sides. Variants are made by editing the valid JSON in memory and writing it to
// a temporary folder, with the shader paths made absolute (tests/compare/data holds the shaders).
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "compare/manifest/bundled_manifest.h"
#include "compare/manifest/manifest.h"
#include "compare/shaders/bundled.h"
#include "core/check.h"

namespace moe::compare {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const std::string kData = std::string(MOE_SOURCE_DIR) + "/tests/compare/data/";

json read_json(const std::string& name) {
  std::ifstream f(kData + name);
  return json::parse(f, nullptr, true, /*ignore_comments=*/true);
}

// A per-process folder for variants, removed when the test binary exits.
fs::path temp_dir() {
  static const moe::test::Scratch s("manifest_test");
  fs::create_directories(s.dir);
  return s.dir;
}

// Writes `j` as <tmp>/<name>.json with every kernel's "spirv"/"glsl" pointing into the data
// folder (absolute), and returns the path.
std::string write_variant(json j, const std::string& name) {
  for (auto& k : j["kernels"])
    for (const char* key : {"spirv", "glsl"})
      if (k.contains(key) && k[key].is_string() && !fs::path(k[key].get<std::string>()).is_absolute())
        k[key] = kData + k[key].get<std::string>();
  std::string path = (temp_dir() / (name + ".json")).string();
  std::ofstream(path) << j.dump(2);
  return path;
}

using test::error_of;

// Loads the SPIR-V fixture after `edit` and expects an error containing every one of `parts`.
void expect_load_error(const char* fixture, const std::function<void(json&)>& edit,
                       std::initializer_list<std::string> parts) {
  json j = read_json(fixture);
  edit(j);
  std::string path = write_variant(j, ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::string m = error_of([&] { load_manifest(path); });
  EXPECT_EQ(m.rfind(path, 0), 0u) << "the message starts with the file: " << m;
  for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing \"" << p << "\" in: " << m;
}

json& kernel0(json& j) { return j["kernels"][0]; }

TEST(Manifest, ValidSpirvLoads) {
  Manifest m = load_manifest(kData + "valid_spirv.json");
  EXPECT_EQ(m.name, "fixture-spirv");
  ASSERT_EQ(m.kernels.size(), 1u);
  const KernelEntry& k = m.kernels[0];
  EXPECT_EQ(k.name, "rmsnorm_f32");
  EXPECT_EQ(k.source_path, fs::canonical(kData + "rmsnorm.spv").string());
  ASSERT_GE(k.spirv.size(), 5u);
  EXPECT_EQ(k.spirv[0], 0x07230203u);
  ASSERT_EQ(k.bindings.size(), 3u);
  EXPECT_EQ(k.bindings[1].tensor, "w");
  EXPECT_EQ(k.bindings[2].access, Access::Out);
  EXPECT_EQ(k.bindings[0].type, ElemType::F32);
  EXPECT_EQ(k.push_constant_size, 12u);
  ASSERT_EQ(k.push_constants.size(), 3u);
  EXPECT_EQ(k.push_constants[1].value, "eps");
  ASSERT_EQ(k.specialization.size(), 2u);
  EXPECT_EQ(k.specialization[0].value, "min(128, subgroup_size * 4)");
  EXPECT_EQ(k.specialization[0].type, "u32");
  // local_size_x_id = 0 with default 64: the size is spec-driven by id 0.
  EXPECT_EQ(k.local_size[0], 64u);
  EXPECT_EQ(k.local_size[1], 1u);
  EXPECT_EQ(k.local_size_spec_id[0], 0u);
  EXPECT_EQ(k.local_size_spec_id[1], kNoSpecId);
  EXPECT_EQ(k.dispatch[0], "rows");
  EXPECT_EQ(k.limits.size(), 2u);
  EXPECT_TRUE(k.subgroup_sizes.empty());  // "any"
  EXPECT_TRUE(k.access_checks);           // on unless the manifest says false
  EXPECT_EQ(m.find_op("rmsnorm"), &m.kernels[0]);
  EXPECT_EQ(m.find_op("attention"), nullptr);
}

TEST(Manifest, ValidGlslLoads) {
  Manifest m = load_manifest(kData + "valid_glsl.json");
  ASSERT_EQ(m.kernels.size(), 2u);
  // Vulkan 1.3 (SPIR-V 1.6): glslang writes LocalSizeId; the spec id is still found.
  const KernelEntry& r = m.kernels[0];
  EXPECT_EQ(r.glsl_target, "vulkan1.3");
  EXPECT_EQ(r.spirv[0], 0x07230203u);
  EXPECT_EQ(r.spirv[1], 0x00010600u);  // SPIR-V 1.6
  EXPECT_EQ(r.push_constant_size, 12u);  // the block comes from the #include
  EXPECT_EQ(r.local_size[0], 64u);
  EXPECT_EQ(r.local_size_spec_id[0], 0u);
  EXPECT_EQ(r.subgroup_sizes, (std::vector<uint32_t>{8, 32, 64}));
  EXPECT_EQ(r.dispatch[1], "1");  // a bare number is an expression too
  // Fixed workgroup size from a define, no push constants, a fused op sequence.
  const KernelEntry& s = m.kernels[1];
  EXPECT_EQ(s.spirv[1], 0x00010500u);  // Vulkan 1.2 default: SPIR-V 1.5
  EXPECT_EQ(s.defines.at("WG"), "32");
  EXPECT_EQ(s.local_size[0], 32u);
  EXPECT_EQ(s.local_size[1], 2u);
  EXPECT_EQ(s.local_size_spec_id[0], kNoSpecId);
  EXPECT_EQ(s.push_constant_size, 0u);
  EXPECT_EQ(s.specialization[0].type, "f32");  // float A: the runner must send 2.0f's bits
  EXPECT_EQ(s.ops, (std::vector<std::string>{"residual_add", "rmsnorm"}));
  EXPECT_EQ(s.accumulation, "f64");
  EXPECT_EQ(s.bindings[0].access, Access::InOut);
  EXPECT_EQ(m.find_op("residual_add"), nullptr);  // only a single-op kernel implements an op
}

// An engine's manifest shipped apart from its shaders ("sources": "kernels_root") names them
// relative to the checkout given as --kernels-root; either side without the other is refused.
TEST(Manifest, SourcesRelativeToTheKernelsRoot) {
  json j = read_json("valid_glsl.json");
  j["sources"] = "kernels_root";
  for (auto& k : j["kernels"]) k["glsl"] = "data/" + k["glsl"].get<std::string>();  // relative to tests/compare
  const std::string path = (temp_dir() / "rooted.json").string();
  std::ofstream(path) << j.dump(2);
  const std::string root = std::string(MOE_SOURCE_DIR) + "/tests/compare";
  Manifest m = load_manifest(path, nullptr, file_system(), root);
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].source_path, fs::absolute(kData + "rmsnorm.comp").lexically_normal().string());
  std::string e = error_of([&] { load_manifest(path); });
  EXPECT_NE(e.find("pass --kernels-root"), std::string::npos) << e;
  e = error_of([&] { load_manifest(path, nullptr, file_system(), root + "/no_such_folder"); });
  EXPECT_NE(e.find("not a directory"), std::string::npos) << e;
  e = error_of([&] { load_manifest(kData + "valid_glsl.json", nullptr, file_system(), root); });
  EXPECT_NE(e.find("relative to its own folder"), std::string::npos) << e;
  j["sources"] = "checkout";
  std::ofstream(path) << j.dump(2);
  e = error_of([&] { load_manifest(path, nullptr, file_system(), root); });
  EXPECT_NE(e.find("sources"), std::string::npos) << e;
}

TEST(Manifest, SpirvFixtureIsTheGlslFixture) {
  // rmsnorm.spv is `glslc --target-env=vulkan1.2 rmsnorm.comp -o rmsnorm.spv`; compile_glsl with
  // the same target gives the same words, so the two valid manifests describe one kernel and a
  // stale .spv shows up here.
  KernelEntry k;
  std::ifstream in(kData + "rmsnorm.comp");
  std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(compile_glsl(src, kData + "rmsnorm.comp", k), read_spirv(kData + "rmsnorm.spv"));
}

// The compiled-GLSL cache (compare/manifest/spirv_cache.h). Its folder is read once per process,
// and CTest runs each test in a process of its own, so each test here sets it first.
std::string rmsnorm_source() {
  std::ifstream in(kData + "rmsnorm.comp");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<fs::path> cache_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

TEST(Manifest, CompiledGlslIsSharedThroughTheCache) {
  const fs::path dir = temp_dir() / "spirv_cache";
  ::setenv("MOE_SPIRV_CACHE", dir.c_str(), 1);
  KernelEntry k;
  const std::string src = rmsnorm_source(), path = kData + "rmsnorm.comp";
  const std::vector<uint32_t> first = compile_glsl(src, path, k, false, true);
  EXPECT_EQ(first, read_spirv(kData + "rmsnorm.spv"));
  ASSERT_EQ(cache_entries(dir).size(), 1u);
  const fs::path entry = cache_entries(dir)[0];
  EXPECT_EQ(read_spirv(entry.string()), first);
  // A hit is read, not recompiled: an entry planted under the key comes back as it is.
  std::vector<uint32_t> planted = first;
  planted.push_back(0);
  std::ofstream(entry, std::ios::binary).write(reinterpret_cast<const char*>(planted.data()),
                                               std::streamsize(planted.size() * 4));
  EXPECT_EQ(compile_glsl(src, path, k, false, true), planted);
  // A damaged entry (not a module) is ignored and rewritten.
  std::ofstream(entry, std::ios::binary) << "bad";
  EXPECT_EQ(compile_glsl(src, path, k, false, true), first);
  EXPECT_EQ(read_spirv(entry.string()), first);
  // What decides the SPIR-V decides the key, from the preprocessed source: a define the code
  // does not use changes nothing (the same entry); one it uses, the optimisation flag and the
  // target each make an entry of their own.
  KernelEntry unused = k;
  unused.defines["UNUSED_DEFINE"] = "1";
  EXPECT_EQ(compile_glsl(src, path, unused, false, true), first);
  EXPECT_EQ(cache_entries(dir).size(), 1u);
  const std::string gated = src + "\n#ifdef PLANT\nconst uint planted_constant = 7u;\n#endif\n";
  KernelEntry used = k;
  used.defines["PLANT"] = "1";
  EXPECT_EQ(compile_glsl(gated, path, k, false, true), first);  // PLANT undefined: the same text
  EXPECT_EQ(cache_entries(dir).size(), 1u);
  EXPECT_NE(compile_glsl(gated, path, used, false, true), first);
  compile_glsl(src, path, k, true, true);
  KernelEntry v13 = k;
  v13.glsl_target = "vulkan1.3";
  compile_glsl(src, path, v13, false, true);
  EXPECT_EQ(cache_entries(dir).size(), 4u);
  // Uncached compiles (mutants) write nothing.
  compile_glsl(src + "\nconst uint another_kernel = 1u;\n", path, k);
  EXPECT_EQ(cache_entries(dir).size(), 4u);
  ::unsetenv("MOE_SPIRV_CACHE");
}

TEST(Manifest, SpirvCacheOff) {
  const fs::path home = temp_dir() / "home";
  fs::create_directories(home);
  ::setenv("HOME", home.c_str(), 1);
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("MOE_SPIRV_CACHE", "0", 1);
  KernelEntry k;
  EXPECT_EQ(compile_glsl(rmsnorm_source(), kData + "rmsnorm.comp", k, false, true), read_spirv(kData + "rmsnorm.spv"));
  EXPECT_TRUE(cache_entries(home).empty());
  ::unsetenv("MOE_SPIRV_CACHE");
}

TEST(Manifest, WrongBindingNumber) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][2]["binding"] = 7; },
                    {"kernel 0 'rmsnorm_f32'", "storage buffer 'Y' (set 0, binding 2) is not declared in the manifest",
                     "declared bindings: 0 \"x\", 1 \"w\", 7 \"y\""});
}

TEST(Manifest, DeclaredBindingMissingFromShader) {
  expect_load_error("valid_spirv.json",
                    [](json& j) { kernel0(j)["bindings"].push_back({{"binding", 5}, {"tensor", "z"}, {"access", "out"}}); },
                    {"bindings[3]: the manifest's binding 5 (tensor \"z\") is not a storage buffer in the shader"});
}

TEST(Manifest, ShaderBindingNotDeclared) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"].erase(1); },
                    {"storage buffer 'W' (set 0, binding 1) is not declared in the manifest",
                     "declared bindings: 0 \"x\", 2 \"y\""});
}

TEST(Manifest, AliasedBindingsShareOneDeclaration) {
  json j = read_json("valid_spirv.json");
  kernel0(j) = {{"name", "alias"}, {"ops", {"residual_add"}}, {"glsl", "alias.comp"}, {"dispatch", {"1", "1", "1"}},
                {"bindings", {{{"binding", 0}, {"tensor", "x"}, {"access", "in"}},
                              {{"binding", 1}, {"tensor", "y"}, {"access", "out"}}}}};
  Manifest m = load_manifest(write_variant(j, "alias"));
  EXPECT_EQ(m.kernels[0].bindings.size(), 2u);
  // Each alias is still checked: both views are readonly, so "inout" is refused.
  kernel0(j)["bindings"][0]["access"] = "inout";
  std::string e = error_of([&] { load_manifest(write_variant(j, "alias_inout")); });
  EXPECT_NE(e.find("binding 0 (tensor \"x\") has access \"inout\", but the shader's storage buffer 'X"), std::string::npos) << e;
}

TEST(Manifest, BindingNotAStorageBuffer) {
  expect_load_error("valid_spirv.json",
                    [](json& j) {
                      kernel0(j) = {{"name", "ubo"}, {"ops", {"rmsnorm"}}, {"glsl", "ubo.comp"}, {"dispatch", {"1", "1", "1"}},
                                    {"bindings", {{{"binding", 0}, {"tensor", "y"}, {"access", "inout"}},
                                                  {{"binding", 1}, {"tensor", "scale"}, {"access", "in"}}}}};
                    },
                    {"kernel 0 'ubo'", "uniform buffer 'U' (set 0, binding 1) is not a storage buffer",
                     "the manifest's binding 1 (tensor \"scale\") expects one"});
}

TEST(Manifest, BindingInAnotherSet) {
  expect_load_error("valid_spirv.json",
                    [](json& j) {
                      kernel0(j) = {{"name", "set1"}, {"ops", {"rmsnorm"}}, {"glsl", "set1.comp"}, {"dispatch", {"1", "1", "1"}},
                                    {"bindings", {{{"binding", 0}, {"tensor", "x"}, {"access", "in"}},
                                                  {{"binding", 1}, {"tensor", "y"}, {"access", "out"}}}}};
                    },
                    {"storage buffer 'Y' (set 1, binding 1) is in set 1, expected set 0",
                     "the manifest's binding 1 (tensor \"y\")"});
}

TEST(Manifest, AccessAgainstReadonly) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][0]["access"] = "inout"; },
                    {"the manifest's binding 0 (tensor \"x\") has access \"inout\"", "'X' (set 0, binding 0) is readonly"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][2]["access"] = "inout"; },
                    {"binding 2 (tensor \"y\") has access \"inout\"", "is writeonly"});
}

TEST(Manifest, PushConstantOffset) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["push_constants"][2]["offset"] = 12; },
                    {"push constant \"rows\": manifest offset 12, shader offset 8",
                     "push-constant block (12 bytes: dim u32 @0, eps f32 @4, rows u32 @8)"});
}

TEST(Manifest, PushConstantSize) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["push_constant_size"] = 16; },
                    {"push_constant_size: manifest declares 16 bytes, the shader's push-constant block is 12 bytes"});
}

TEST(Manifest, PushConstantMembers) {
  expect_load_error("valid_spirv.json",
                    [](json& j) {
                      kernel0(j)["push_constants"].push_back({{"name", "scale"}, {"type", "f32"}, {"offset", 12}, {"value", "1"}});
                    },
                    {"push_constants[3] \"scale\" is not a member of the shader's push-constant block"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["push_constants"].erase(2); },
                    {"push constant member \"rows\" (u32 @8)", "is not declared in the manifest"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["push_constants"][1]["type"] = "u32"; },
                    {"push constant \"eps\": manifest type u32, shader type f32"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j).erase("push_constants"); },
                    {"push_constants: the manifest declares none, but the shader's push-constant block (12 bytes"});
}

TEST(Manifest, StrippedSpirvMatchesPushConstantsByOffset) {
  // rmsnorm_opt.spv is `glslc -O` of rmsnorm.comp: no names left.
  json j = read_json("valid_spirv.json");
  kernel0(j)["spirv"] = "rmsnorm_opt.spv";
  Manifest m = load_manifest(write_variant(j, "stripped"));
  EXPECT_EQ(m.kernels[0].push_constant_size, 12u);
  expect_load_error("valid_spirv.json",
                    [](json& j) {
                      kernel0(j)["spirv"] = "rmsnorm_opt.spv";
                      kernel0(j)["push_constants"][2]["offset"] = 12;
                    },
                    {"push_constants[2] \"rows\" (offset 12) has no member at its offset in the shader's push-constant "
                     "block (12 bytes: <unnamed> u32 @0, <unnamed> f32 @4, <unnamed> u32 @8); the SPIR-V has no member "
                     "names, so members match by offset"});
  expect_load_error("valid_spirv.json",
                    [](json& j) {
                      kernel0(j)["spirv"] = "rmsnorm_opt.spv";
                      kernel0(j)["push_constants"][1]["type"] = "u32";
                    },
                    {"push constant \"eps\": manifest type u32, shader type f32"});
}

TEST(Manifest, UnknownSpecId) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["specialization"][1]["id"] = 5; },
                    {"specialization[1]: the manifest sets spec constant id 5, the shader's spec constant ids are {0, 1}"});
}

TEST(Manifest, MissingEntryPoint) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["entry"] = "rmsnorm_main"; },
                    {"entry: the manifest names entry point 'rmsnorm_main', the SPIR-V has 'main' (compute)"});
}

TEST(Manifest, EntryPointNotCompute) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["spirv"] = "vertex.spv"; },
                    {"kernel 0 'rmsnorm_f32': entry point 'main' is a vertex shader, expected a compute shader"});
}

TEST(Manifest, BadSpirvFiles) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["spirv"] = "bad_magic.spv"; },
                    {"kernel 0 'rmsnorm_f32': spirv:", "bad_magic.spv': not SPIR-V: first word 0x73696874",
                     "expected magic 0x07230203"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["spirv"] = "truncated.spv"; },
                    {"truncated.spv': 4122 bytes, expected a multiple of 4"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["spirv"] = "no_such.spv"; },
                    {"spirv: spirv: cannot open '", "no_such.spv'"});
}

TEST(Manifest, InvalidSpirvBody) {
  // Whole words, right magic, but the last instructions cut off: spirv-val says so before
  // spirv-cross or a driver sees it.
  std::string path = (temp_dir() / "cut.spv").string();
  {
    std::ifstream in(kData + "rmsnorm.spv", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 8);
  }
  expect_load_error("valid_spirv.json", [&](json& j) { kernel0(j)["spirv"] = path; },
                    {"kernel 0 'rmsnorm_f32': invalid SPIR-V (spirv-val, Vulkan 1.2 rules):", "word "});
}

TEST(Manifest, ByteSwappedMagic) {
  std::string path = (temp_dir() / "swapped.spv").string();
  {
    std::ifstream in(kData + "rmsnorm.spv", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) std::swap(bytes[i], bytes[i + 3]), std::swap(bytes[i + 1], bytes[i + 2]);
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::string m = error_of([&] { read_spirv(path); });
  EXPECT_NE(m.find("SPIR-V magic is byte-swapped (0x3022307)"), std::string::npos) << m;
}

TEST(Manifest, GlslCompileError) {
  expect_load_error("valid_glsl.json", [](json& j) { kernel0(j)["glsl"] = "broken.comp"; },
                    {"kernel 0 'rmsnorm_glsl': glsl:", "GLSL compile failed (vulkan1.3)", "broken.comp:6:",
                     "'undeclared_thing' : undeclared identifier"});
  // A define the shader requires, missing: its #error text comes through.
  expect_load_error("valid_glsl.json", [](json& j) { j["kernels"][1].erase("defines"); },
                    {"kernel 1 'scale_fused': glsl:", "WG must be defined by the manifest"});
}

TEST(Manifest, UnknownAccessValue) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][2]["access"] = "readwrite"; },
                    {"kernel 0 'rmsnorm_f32': bindings[2].access: expected one of in | out | inout, found \"readwrite\""});
}

TEST(Manifest, MalformedJson) {
  std::string m = error_of([&] { load_manifest(kData + "malformed.json"); });
  EXPECT_NE(m.find("malformed.json: malformed JSON:"), std::string::npos) << m;
  EXPECT_NE(m.find("line 4"), std::string::npos) << m;  // nlohmann names the place
  m = error_of([&] { load_manifest(kData + "no_such_manifest.json"); });
  EXPECT_NE(m.find("manifest: cannot open '"), std::string::npos) << m;
}

TEST(Manifest, StructureErrors) {
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindngs"] = kernel0(j)["bindings"]; },
                    {"kernel 0: unknown key \"bindngs\" (known: access_checks, accumulation, bindings,"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["ops"] = {"rmsnrom"}; },
                    {"'rmsnorm_f32': ops[0]: unknown op \"rmsnrom\" (known: argmax, attention,"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][1]["binding"] = "1"; },
                    {"bindings[1].binding: expected an integer in [0, 1023], found string \"1\""});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][1]["binding"] = 0; },
                    {"bindings[0] and bindings[1] both use binding 0"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][2]["access"] = "in"; },
                    {"no binding has access \"out\" or \"inout\""});
  // f16 is a binding type (docs/manifests.md "f16 buffers"); an 8-bit float is not.
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["bindings"][1]["type"] = "f8"; },
                    {"bindings[1].type: expected one of f32 | bf16 | f16 | u32 | i32, found \"f8\""});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["push_constants"][1]["offset"] = 6; },
                    {"push_constants[1].offset: expected a multiple of 4 (a 32-bit f32), found 6"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["dispatch"] = {"rows", "1"}; },
                    {"dispatch: expected an array of 3 expressions (x, y, z), found array [\"rows\",\"1\"]"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["dispatch"][0] = "ceil_div(rows, "; },
                    {"dispatch[0]: expression 'ceil_div(rows, ': unexpected end"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["limits"][0] = "dim =< 4"; },
                    {"limits[0]: expression 'dim =< 4'"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["subgroup_sizes"] = {32, 48}; },
                    {"subgroup_sizes[1]: expected a power of two in [1, 128], found 48"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["glsl"] = "rmsnorm.comp"; },
                    {"expected exactly one of \"spirv\" and \"glsl\", found both"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["glsl_target"] = "vulkan1.3"; },
                    {"\"glsl_target\" applies only to a \"glsl\" source"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["access_checks"] = "no"; },
                    {"access_checks: expected true or false, found string"});
  expect_load_error("valid_spirv.json", [](json& j) { kernel0(j)["accumulation"] = "bf16"; },
                    {"accumulation: expected one of f32 | f16 | f64, found \"bf16\""});
  expect_load_error("valid_spirv.json", [](json& j) { j["version"] = 2; }, {"version: expected 1, found 2"});
  expect_load_error("valid_spirv.json", [](json& j) { j["kernels"].push_back(kernel0(j)); },
                    {"kernel 1: kernel name \"rmsnorm_f32\" is used twice"});
}

// Engine layouts (docs/manifests.md): every malformed view, pack, in-place, scratch and let is
// refused at load with the field named.
TEST(Manifest, LayoutErrors) {
  auto b0 = [](json& j) -> json& { return kernel0(j)["bindings"][0]; };
  expect_load_error("valid_spirv.json", [&](json& j) { b0(j)["pack"] = json::array({{{"tensor", "x"}}}); },
                    {"bindings[0]: expected exactly one of \"tensor\", \"pack\" and \"scratch\", found several"});
  expect_load_error("valid_spirv.json", [&](json& j) { b0(j)["strides"] = {"1"}; },
                    {"bindings[0].strides: strides need a \"shape\" of the same length"});
  expect_load_error("valid_spirv.json", [&](json& j) { b0(j)["shape"] = {"rows", "dim"}, b0(j)["strides"] = {"dim"}; },
                    {"bindings[0].strides: 1 strides for a shape of 2 dimensions"});
  expect_load_error("valid_spirv.json", [&](json& j) { b0(j)["shape"] = json::array(); },
                    {"bindings[0].shape: expected a non-empty array of expressions"});
  expect_load_error("valid_spirv.json", [&](json& j) { b0(j)["becomes"] = "y"; },
                    {"bindings[0].becomes: an in-place result needs access \"inout\""});
  expect_load_error("valid_spirv.json", [&](json& j) { b0(j)["offset"] = "dim +"; },
                    {"bindings[0].offset: expression 'dim +'"});
  expect_load_error("valid_spirv.json", [&](json& j) { b0(j)["fill"] = "nan"; },
                    {"bindings[0].fill: expected one of poison | zero, found \"nan\""});
  expect_load_error("valid_spirv.json",
                    [&](json& j) {
                      b0(j).erase("tensor");
                      b0(j)["pack"] = json::array({{{"tensor", "x"}, {"value", "dim"}, {"type", "u32"}}});
                    },
                    {"bindings[0].pack[0]: expected exactly one of \"tensor\" and \"value\", found both"});
  expect_load_error("valid_spirv.json",
                    [&](json& j) {
                      b0(j).erase("tensor");
                      b0(j)["pack"] = json::array({{{"value", "dim"}}});
                    },
                    {"bindings[0].pack[0]: a \"value\" part needs \"type\": u32, i32 or f32"});
  expect_load_error("valid_spirv.json",
                    [&](json& j) {
                      auto& b = kernel0(j)["bindings"][2];
                      b.erase("tensor");
                      b["pack"] = json::array({{{"value", "dim"}, {"type", "u32"}}});
                    },
                    {"bindings[2].pack[0]: a \"value\" part can only be in an \"in\" binding"});
  expect_load_error("valid_spirv.json",
                    [&](json& j) {
                      b0(j).erase("tensor");
                      b0(j)["scratch"] = "rows";
                    },
                    {"bindings[0]: an unnamed scratch buffer is written by the kernel: access \"out\" or \"inout\""});
  expect_load_error("valid_spirv.json", [&](json& j) { kernel0(j)["let"] = {{"a", "b + 1"}, {"b", "a"}}; },
                    {"let: the lets a, b depend on each other in a cycle"});
  expect_load_error("valid_spirv.json", [&](json& j) { kernel0(j)["let"] = {{"2x", "1"}}; },
                    {"let: \"2x\" is not a name"});
}

TEST(Manifest, SequenceErrors) {
  auto seq = [](json& j, json kernels) {
    j["sequences"] = json::array({{{"name", "two"}, {"op", "rmsnorm"}, {"kernels", kernels}}});
  };
  expect_load_error("valid_spirv.json", [&](json& j) { seq(j, {"rmsnorm_f32"}); },
                    {"sequences[0].kernels: a sequence needs at least two kernels"});
  expect_load_error("valid_spirv.json", [&](json& j) { seq(j, {"rmsnorm_f32", "nope"}); },
                    {"sequences[0].kernels: no kernel named \"nope\""});
  expect_load_error("valid_spirv.json", [&](json& j) { seq(j, {"rmsnorm_f32", "rmsnorm_f32"}); },
                    {"kernel \"rmsnorm_f32\" is in two sequences (or twice in one)"});
  expect_load_error("valid_spirv.json",
                    [&](json& j) {
                      seq(j, {"rmsnorm_f32", "rmsnorm_f32"});
                      j["sequences"][0]["op"] = "argmax";
                    },
                    {"kernel \"rmsnorm_f32\" must have \"ops\": [\"argmax\"]"});
  expect_load_error("valid_spirv.json", [&](json& j) { kernel0(j)["bindings"][0]["name"] = "p"; },
                    {"bindings[0]: \"name\" applies only to a scratch buffer"});
}

TEST(Manifest, LetsAreOrderedAndEvaluated) {
  json j = read_json("valid_spirv.json");
  kernel0(j)["let"] = {{"stride", "dim + pad"}, {"pad", "4"}};
  kernel0(j)["push_constants"][0]["value"] = "stride";
  const Manifest m = load_manifest(write_variant(j, "lets"));
  ASSERT_EQ(m.kernels[0].lets.size(), 2u);
  EXPECT_EQ(m.kernels[0].lets[0].first, "pad");  // before the let that reads it
  ExprVars v = {{"rows", 2}, {"dim", 60}, {"eps", 1e-6}, {"add_one", 0}, {"subgroup_size", 8}};
  const KernelInstance in = instantiate(m.kernels[0], v, m.path);
  EXPECT_EQ(in.vars.at("stride"), 64);
  uint32_t dim_pc = 0;
  std::memcpy(&dim_pc, in.push_constants.data(), 4);
  EXPECT_EQ(dim_pc, 64u);
  v["pad"] = 1;  // a let may not shadow an op or device variable
  EXPECT_NE(error_of([&] { instantiate(m.kernels[0], v, m.path); }).find("let \"pad\" shadows"), std::string::npos);
}

TEST(Manifest, PathsAreRelativeToTheManifest) {
  // The same manifest copied next to a copy of its .spv loads from any working directory.
  fs::path d = temp_dir() / "elsewhere";
  fs::create_directories(d);
  fs::copy_file(kData + "rmsnorm.spv", d / "rmsnorm.spv", fs::copy_options::overwrite_existing);
  fs::copy_file(kData + "valid_spirv.json", d / "m.json", fs::copy_options::overwrite_existing);
  Manifest m = load_manifest((d / "m.json").string());
  EXPECT_EQ(m.kernels[0].source_path, (d / "rmsnorm.spv").string());
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(Manifest, InMemoryTreeLoadsLikeTheFiles) {
  // The GLSL fixture (an #include in it) held in memory under a root that is no folder on disk.
  std::map<std::string, std::string> files;
  for (const char* name : {"valid_glsl.json", "rmsnorm.comp", "rmsnorm_common.glsl", "scale.comp"})
    files[std::string("/in-memory/") + name] = file_text(kData + name);
  auto tree = std::make_shared<const SourceFiles>(files);
  const Manifest mem = load_manifest("/in-memory/valid_glsl.json", nullptr, tree);
  const Manifest disk = load_manifest(kData + "valid_glsl.json");
  ASSERT_EQ(mem.kernels.size(), disk.kernels.size());
  for (size_t i = 0; i < mem.kernels.size(); ++i) {
    EXPECT_EQ(mem.kernels[i].spirv, disk.kernels[i].spirv) << mem.kernels[i].name;
    EXPECT_EQ(mem.kernels[i].files, tree);  // recompiling it (mutate) reads the same tree
  }
  // A file the tree lacks is named, and nothing falls back to the disk.
  files.erase("/in-memory/rmsnorm_common.glsl");
  std::string e = error_of([&] {
    load_manifest("/in-memory/valid_glsl.json", nullptr, std::make_shared<const SourceFiles>(files));
  });
  EXPECT_NE(e.find("/in-memory/rmsnorm_common.glsl"), std::string::npos) << e;
  e = error_of([&] { load_manifest("/in-memory/missing.json", nullptr, tree); });
  EXPECT_NE(e.find("manifest: cannot open '/in-memory/missing.json'"), std::string::npos) << e;
}

TEST(Manifest, BundledManifestNeedsNoDisk) {
  // With no usable temporary folder the bundled set still loads: it is read from memory.
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  setenv("TMPDIR", "/nonexistent/moeoracle-no-tmp", 1);
  const Manifest spirv = load_bundled_manifest(false);
  const Manifest glsl = load_bundled_manifest(true);
  if (old) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
  ASSERT_FALSE(spirv.kernels.empty());
  ASSERT_EQ(glsl.kernels.size(), spirv.kernels.size());
  EXPECT_EQ(spirv.path, "");
  for (size_t i = 0; i < spirv.kernels.size(); ++i) {
    EXPECT_FALSE(spirv.kernels[i].from_glsl);
    EXPECT_TRUE(glsl.kernels[i].from_glsl);
    EXPECT_EQ(glsl.kernels[i].push_constant_size, spirv.kernels[i].push_constant_size) << spirv.kernels[i].name;
  }
}

uint32_t word_at(const std::vector<uint8_t>& bytes, size_t offset) {
  uint32_t w = 0;
  std::memcpy(&w, bytes.data() + offset, 4);
  return w;
}

TEST(Instantiate, ValuesInTheirTypes) {
  Manifest m = load_manifest(kData + "valid_spirv.json");
  ExprVars v{{"rows", 3}, {"dim", 4096}, {"eps", double(1e-6f)}, {"subgroup_size", 8}};
  KernelInstance in = instantiate(m.kernels[0], v, m.path);
  EXPECT_EQ(in.skipped, "");
  ASSERT_EQ(in.push_constants.size(), 12u);
  EXPECT_EQ(word_at(in.push_constants, 0), 4096u);
  EXPECT_EQ(word_at(in.push_constants, 4), std::bit_cast<uint32_t>(1e-6f));  // the f32 the CPU op uses
  EXPECT_EQ(word_at(in.push_constants, 8), 3u);
  using P = std::pair<uint32_t, uint32_t>;
  EXPECT_EQ(in.spec_constants, (std::vector<P>{{0, 32}, {1, 1}}));  // min(128, 8 * 4)
  EXPECT_EQ(in.local_size[0], 32u);  // spec id 0 drives local_size_x
  EXPECT_EQ(in.groups[0], 3u);
  EXPECT_EQ(in.groups[1], 1u);

  // A float spec constant gets float bits; ceil_div in the dispatch.
  Manifest g = load_manifest(kData + "valid_glsl.json");
  in = instantiate(g.kernels[1], {{"n", 65}}, g.path);
  EXPECT_EQ(in.spec_constants, (std::vector<P>{{3, std::bit_cast<uint32_t>(2.0f)}}));
  EXPECT_EQ(in.groups[0], 3u);
  EXPECT_EQ(in.local_size[0], 32u);
  EXPECT_EQ(in.local_size[1], 2u);
  EXPECT_TRUE(in.push_constants.empty());
}

TEST(Instantiate, LimitsSkipWithTheReason) {
  Manifest m = load_manifest(kData + "valid_spirv.json");
  // The first failing limit decides; dispatch is not evaluated (rows is missing and would throw).
  KernelInstance in = instantiate(m.kernels[0], {{"dim", 100000}}, m.path);
  EXPECT_EQ(in.skipped, "dim <= 65536 (dim = 100000)");
  in = instantiate(m.kernels[0], {{"dim", 4098}}, m.path);
  EXPECT_EQ(in.skipped, "dim % 4 == 0 (dim = 4098)");
}

TEST(Instantiate, ValuesThatDoNotFitAreErrors) {
  Manifest m = load_manifest(kData + "valid_spirv.json");
  ExprVars v{{"rows", 3}, {"dim", 4096}, {"eps", 1e-6}, {"subgroup_size", 8}};
  KernelEntry k = m.kernels[0];
  k.push_constants[2].value = "rows - 4";
  std::string e = error_of([&] { instantiate(k, v, "m.json"); });
  EXPECT_NE(e.find("m.json 'rmsnorm_f32': push constant \"rows\" (rows - 4) = -1 does not fit a u32"), std::string::npos) << e;
  k = m.kernels[0];
  k.push_constants[0].value = "dim / 3.0";
  e = error_of([&] { instantiate(k, v, "m.json"); });
  EXPECT_NE(e.find("= 1365.3333333333333 does not fit a u32"), std::string::npos) << e;
  k = m.kernels[0];
  k.push_constants[1].value = "1e39";
  e = error_of([&] { instantiate(k, v, "m.json"); });
  EXPECT_NE(e.find("push constant \"eps\" (1e39) = 1e+39 is not an f32"), std::string::npos) << e;
  k = m.kernels[0];
  k.push_constants[1].value = "-inf";  // an infinity asked for is exact (ggml's unclamped bounds)
  const std::vector<uint8_t> pc = instantiate(k, v, "m.json").push_constants;
  uint32_t eps_bits = 0;
  std::memcpy(&eps_bits, pc.data() + 4, 4);
  EXPECT_EQ(eps_bits, 0xff800000u);
  k = m.kernels[0];
  k.dispatch[0] = "rows - 3";
  e = error_of([&] { instantiate(k, v, "m.json"); });
  EXPECT_NE(e.find("dispatch[0] (rows - 3) = 0 workgroups; expected at least 1"), std::string::npos) << e;
  k = m.kernels[0];
  k.specialization[0].value = "0";
  e = error_of([&] { instantiate(k, v, "m.json"); });
  EXPECT_NE(e.find("spec constant 0 (0) = 0 is workgroup size dimension 0"), std::string::npos) << e;
  k = m.kernels[0];
  k.dispatch[1] = "4294967296";
  e = error_of([&] { instantiate(k, v, "m.json"); });
  EXPECT_NE(e.find("dispatch[1] (4294967296) = 4294967296 does not fit a u32"), std::string::npos) << e;
}

TEST(Manifest, ReflectAndCheckOnAnEmbeddedEntry) {
  // The bundled set builds KernelEntry in code and calls reflect_and_check directly.
  Manifest m = load_manifest(kData + "valid_spirv.json");
  KernelEntry k = m.kernels[0];
  k.push_constant_size = 0;
  k.local_size[0] = 0;
  reflect_and_check(k, "<bundled>");
  EXPECT_EQ(k.push_constant_size, 12u);
  EXPECT_EQ(k.local_size[0], 64u);
  k.bindings[0].binding = 9;
  std::string e = error_of([&] { reflect_and_check(k, "<bundled>"); });
  EXPECT_EQ(e.rfind("<bundled> 'rmsnorm_f32': ", 0), 0u) << e;
}

// The bundled matvec_bf16 takes 2 rows a workgroup above 2048 rows, and more where the device
// allows fewer workgroups than that needs: the lm_heads (248320 rows) fit a device with the
// minimum 65535 workgroups in x. No device here shows it (lavapipe cannot hold an lm_head), so
// the rule is evaluated as the runner evaluates it.
TEST(BundledRules, MatvecBf16RowsPerWorkgroupFitTheWorkgroupCountLimit) {
  const nlohmann::json j = nlohmann::json::parse(bundled_manifest_json());
  const nlohmann::json* k = nullptr;
  for (const auto& e : j["kernels"])
    if (e["name"] == "matvec_bf16") k = &e;
  ASSERT_NE(k, nullptr);
  auto eval = [&](double rows, double count_x) {
    ExprVars v{{"rows", rows}, {"cols", 4096}, {"subgroup_size", 32}, {"max_workgroup_invocations", 1024},
               {"max_workgroup_subgroups", 32}, {"max_workgroup_count_x", count_x}};
    for (const char* name : {"R", "U", "WG"}) v[name] = eval_expr((*k)["let"][name].get<std::string>(), v);
    v["groups"] = eval_expr((*k)["dispatch"][0].get<std::string>(), v);
    return v;
  };
  ExprVars small = eval(248320, 65535), large = eval(248320, 2147483647.0), few = eval(256, 65535);
  EXPECT_EQ(small["R"], 4);
  EXPECT_LE(small["groups"], 65535);
  EXPECT_EQ(large["R"], 2);
  EXPECT_EQ(large["groups"], 124160);
  EXPECT_EQ(few["R"], 1);
  for (const ExprVars* v : {&small, &large, &few}) EXPECT_GE((*v).at("WG"), (*v).at("R"));
}

// Every bundled kernel with a grid of ceil(rows / R) workgroups in x must keep the lm_heads' 248320
// rows within a device that allows 65535 workgroups in x (many do; NVIDIA allows 2^31 - 1): a rule
// tuned on one device that forgets it turns those cases into "no kernel accepts the case" on others.
// Evaluated as the runner does, at the shapes' column counts and at 1 and 16 tokens.
TEST(BundledRules, EveryRowsPerWorkgroupRuleFitsA65535WorkgroupDevice) {
  const nlohmann::json j = nlohmann::json::parse(bundled_manifest_json());
  int checked = 0;
  for (const auto& k : j["kernels"]) {
    if (!k.contains("let") || !k["let"].contains("R") || k["dispatch"][0] != "ceil_div(rows, R)") continue;
    const std::string name = k["name"];
    for (double cols : {2048.0, 4096.0, 8192.0})
      for (double tokens : {1.0, 16.0}) {
        ExprVars v{{"rows", 248320},        {"cols", cols},
                   {"tokens", tokens},      {"group_size", 64},
                   {"subgroup_size", 32},   {"max_workgroup_invocations", 1024},
                   {"max_workgroup_subgroups", 32}, {"max_workgroup_count_x", 65535},
                   {"max_workgroup_count_y", 65535}};
        // Lets in dependency order (JSON objects come back sorted by name): evaluate what can be.
        std::map<std::string, std::string> pending;
        for (const auto& [let, expr] : k["let"].items()) pending[let] = expr.get<std::string>();
        for (bool progress = true; progress && !pending.empty();) {
          progress = false;
          for (auto it = pending.begin(); it != pending.end();) {
            bool known = true;
            for (const std::string& n : expr_names(it->second)) known &= v.count(n) > 0;
            if (!known) {
              ++it;
              continue;
            }
            v[it->first] = eval_expr(it->second, v);
            it = pending.erase(it);
            progress = true;
          }
        }
        ASSERT_TRUE(pending.empty()) << name << ": a let reads a name this test does not give: " << pending.begin()->first;
        const double groups = eval_expr(k["dispatch"][0].get<std::string>(), v);
        EXPECT_LE(groups, 65535) << name << " at cols " << cols << ", tokens " << tokens << ": R = " << v["R"];
        EXPECT_GE(v.at("WG"), v.at("R")) << name;
      }
    ++checked;
  }
  EXPECT_GE(checked, 7);  // matvec_q2/q4/q8, matvec_bf16, matmul_q2/q4/q8
}

}  // namespace
}  // namespace moe::compare
