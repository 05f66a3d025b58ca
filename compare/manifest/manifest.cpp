// Loading a kernel manifest (manifest.h): the JSON structure, field by field; the SPIR-V read or
// compiled from GLSL; then reflect_and_check (reflect.cpp). The format is strict: an unknown key
// is an error (a misspelt "bindngs" must not silently mean "no bindings"), every value has its
// type checked, and every message starts with the file and the kernel so the engine author can
// go straight to the line.
#include <algorithm>
#include <cctype>
#include <map>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <shaderc/shaderc.hpp>

#include "compare/manifest/manifest.h"
#include "compare/cases/conventions.h"
#include "compare/manifest/chains.h"
#include "compare/manifest/spirv_cache.h"

#include "core/check.h"

namespace moe::compare {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The op names a manifest may use: the op list and the stage ops of compare/manifest/chains.h.
const std::set<std::string>& known_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> s = {
#define MOE_OP(stem, summary) #stem,
#include "kernels_cpu/op_list.def"
#undef MOE_OP
    };
    for (const std::string& stage : stage_ops()) s.insert(stage);
    return s;
  }();
  return ops;
}

std::string join(const std::set<std::string>& s, const char* sep = " | ") {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : sep) + x;
  return out;
}

// "integer 5", "string \"1\"", "array [1,2]": the kind and the value, cut at 60 characters so a
// whole misplaced object does not flood the message.
std::string type_name(const json& j) {
  std::string text = j.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  if (j.is_number_integer()) return "integer " + text;
  return std::string(j.type_name()) + " " + text;
}

// A field context: "<file>: kernel 2 'rmsnorm_f32': bindings[1].access".
struct Ctx {
  std::string prefix;  // "<file>: kernel 2 'rmsnorm_f32'"
  std::string field;
  std::string str() const { return field.empty() ? prefix : prefix + ": " + field; }
  Ctx sub(const std::string& f) const { return {prefix, field.empty() ? f : field + (!f.empty() && f[0] == '[' ? "" : ".") + f}; }
};

// "[3]" built by appends: GCC 12 warns falsely (-Wrestrict) on "[" + std::to_string(i) + "]".
std::string idx(size_t i) {
  std::string s(1, '[');
  s += std::to_string(i);
  s += ']';
  return s;
}

void only_keys(const json& obj, const std::set<std::string>& keys, const Ctx& c) {
  MOE_CHECK(obj.is_object(), c.str() << ": expected an object, found " << type_name(obj));
  for (const auto& [k, v] : obj.items())
    MOE_CHECK(keys.count(k), c.str() << ": unknown key \"" << k << "\" (known: " << join(keys, ", ") << ")");
}

const json& need(const json& obj, const char* key, const Ctx& c) {
  MOE_CHECK(obj.contains(key), c.str() << ": missing required key \"" << key << "\"");
  return obj.at(key);
}

std::string get_string(const json& j, const Ctx& c, bool nonempty = true) {
  MOE_CHECK(j.is_string(), c.str() << ": expected a string, found " << type_name(j));
  std::string s = j.get<std::string>();
  MOE_CHECK(!nonempty || !s.empty(), c.str() << ": expected a non-empty string, found \"\"");
  return s;
}

uint32_t get_u32(const json& j, const Ctx& c, uint32_t max = 0xffffffffu) {
  MOE_CHECK(j.is_number_integer() && j.get<int64_t>() >= 0 && j.get<int64_t>() <= int64_t{max},
            c.str() << ": expected an integer in [0, " << max << "], found " << type_name(j));
  return static_cast<uint32_t>(j.get<int64_t>());
}

// An expression field: a string (or a bare integer, written as its decimal), syntax-checked now.
std::string get_expr(const json& j, const Ctx& c) {
  std::string e;
  // The unsigned case first: 2^64 - 1 read as int64 would be the expression "-1".
  if (j.is_number_unsigned()) e = std::to_string(j.get<uint64_t>());
  else if (j.is_number_integer()) e = std::to_string(j.get<int64_t>());
  else e = get_string(j, c);
  try {
    check_expr(e);
  } catch (const Error& err) {
    MOE_FAIL(c.str() << ": " << err.what());
  }
  return e;
}

template <class E>
E get_enum(const json& j, const Ctx& c, const std::vector<std::pair<const char*, E>>& values) {
  std::string s = get_string(j, c);
  std::string known;
  for (const auto& [name, v] : values) {
    if (s == name) return v;
    known += (known.empty() ? "" : " | ") + std::string(name);
  }
  MOE_FAIL(c.str() << ": expected one of " << known << ", found \"" << s << "\"");
}

ElemType parse_type(const json& j, const Ctx& c) {
  return get_enum<ElemType>(j, c, {{"f32", ElemType::F32}, {"bf16", ElemType::BF16}, {"f16", ElemType::F16},
                                   {"u32", ElemType::U32}, {"i32", ElemType::I32}});
}

std::vector<std::string> parse_exprs(const json& j, const Ctx& c) {
  MOE_CHECK(j.is_array() && !j.empty(), c.str() << ": expected a non-empty array of expressions, found " << type_name(j));
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(get_expr(j[i], c.sub(idx(i))));
  return out;
}

// The view keys of a tensor binding or a pack part (docs/manifests.md "Views").
void parse_view_keys(const json& j, const Ctx& c, ViewSpec& v) {
  if (j.contains("from")) v.from = get_expr(j["from"], c.sub("from"));
  if (j.contains("shape")) v.shape = parse_exprs(j["shape"], c.sub("shape"));
  if (j.contains("strides")) {
    MOE_CHECK(j.contains("shape"), c.sub("strides").str() << ": strides need a \"shape\" of the same length");
    v.strides = parse_exprs(j["strides"], c.sub("strides"));
    MOE_CHECK(v.strides.size() == v.shape.size(), c.sub("strides").str() << ": " << v.strides.size()
                                                    << " strides for a shape of " << v.shape.size() << " dimensions");
  }
  if (j.contains("tensor_strides")) {
    MOE_CHECK(j.contains("shape"), c.sub("tensor_strides").str() << ": tensor_strides need a \"shape\" of the same length");
    v.tensor_strides = parse_exprs(j["tensor_strides"], c.sub("tensor_strides"));
    MOE_CHECK(v.tensor_strides.size() == v.shape.size(), c.sub("tensor_strides").str()
                                                           << ": " << v.tensor_strides.size() << " strides for a shape of "
                                                           << v.shape.size() << " dimensions");
  }
  if (j.contains("offset")) v.offset = get_expr(j["offset"], c.sub("offset"));
}

// A generated part or binding (docs/manifests.md "Generated tensors"): values the manifest
// computes per element of "shape", read by the kernel, never compared.
void parse_generate(const json& j, const Ctx& c, Access access, ViewSpec& v) {
  MOE_CHECK(access == Access::In, c.str() << ": \"generate\" needs access \"in\" (generated values are read, never "
                                          << "compared)");
  MOE_CHECK(j.contains("shape"), c.str() << ": \"generate\" needs a \"shape\" (the dimensions the index variables "
                                         << "i0, i1, ... run over)");
  for (const char* k : {"from", "tensor_strides", "becomes"})
    MOE_CHECK(!j.contains(k), c.str() << ": \"" << k << "\" does not apply to generated values (no op tensor)");
  v.generate = get_expr(j["generate"], c.sub("generate"));
  parse_view_keys(j, c, v);
}

ViewSpec parse_part(const json& j, const Ctx& c, Access access) {
  only_keys(j, {"tensor", "value", "generate", "type", "from", "shape", "strides", "tensor_strides", "offset", "becomes"},
            c);
  ViewSpec v;
  const int kinds = int(j.contains("tensor")) + int(j.contains("value")) + int(j.contains("generate"));
  MOE_CHECK(kinds == 1, c.str() << ": expected exactly one of \"tensor\" and \"value\", found "
                                << (kinds == 0 ? "neither" : kinds == 2 ? "both" : "all three")
                                << " (a part may also be \"generate\" alone)");
  if (j.contains("type")) v.type = parse_type(j["type"], c.sub("type")), v.type_declared = true;
  if (j.contains("generate")) {
    parse_generate(j, c, access, v);
    return v;
  }
  if (j.contains("value")) {
    MOE_CHECK(access == Access::In, c.str() << ": a \"value\" part can only be in an \"in\" binding (nothing reads it back)");
    MOE_CHECK(v.type_declared && v.type != ElemType::BF16 && v.type != ElemType::F16,
              c.str() << ": a \"value\" part needs \"type\": u32, i32 or f32");
    for (const char* k : {"from", "shape", "strides", "tensor_strides", "becomes"})
      MOE_CHECK(!j.contains(k), c.str() << ": \"" << k << "\" does not apply to a \"value\" part");
    v.value = get_expr(j["value"], c.sub("value"));
    if (j.contains("offset")) v.offset = get_expr(j["offset"], c.sub("offset"));
    return v;
  }
  v.tensor = get_string(j["tensor"], c.sub("tensor"));
  parse_view_keys(j, c, v);
  if (j.contains("becomes")) {
    MOE_CHECK(access == Access::InOut, c.sub("becomes").str() << ": an in-place result needs access \"inout\"");
    v.becomes = get_string(j["becomes"], c.sub("becomes"));
    MOE_CHECK(v.becomes != v.tensor, c.sub("becomes").str() << ": \"" << v.becomes << "\" is the tensor itself; "
                                                            << "a plain \"inout\" binding says that");
  }
  return v;
}

ManifestBinding parse_binding(const json& j, const Ctx& c) {
  only_keys(j, {"binding", "tensor", "access", "type", "from", "shape", "strides", "tensor_strides", "offset", "becomes",
                "pack", "scratch", "name", "size", "fill", "descriptor", "generate", "same_as"},
            c);
  ManifestBinding b;
  // Vulkan allows larger binding numbers, but no compute kernel needs 1024 descriptors; a
  // bigger number is a typo.
  b.binding = get_u32(need(j, "binding", c), c.sub("binding"), 1023);
  if (j.contains("same_as")) {
    // An alias is the root's buffer at another descriptor: anything declared on it would be a
    // second description of one buffer (parse_bindings resolves it).
    for (const auto& [key, val] : j.items())
      MOE_CHECK(key == "binding" || key == "same_as",
                c.str() << ": \"" << key << "\" cannot be declared on an alias (\"same_as\"): it takes everything from "
                        << "the binding it aliases");
    b.same_as = get_u32(j["same_as"], c.sub("same_as"), 1023);
    MOE_CHECK(b.same_as != int64_t{b.binding}, c.sub("same_as").str() << ": binding " << b.binding << " aliases itself");
    return b;
  }
  b.access = get_enum<Access>(need(j, "access", c), c.sub("access"),
                              {{"in", Access::In}, {"out", Access::Out}, {"inout", Access::InOut}});
  if (j.contains("type")) b.type = parse_type(j["type"], c.sub("type"));
  if (j.contains("descriptor"))
    b.uniform = get_enum<bool>(j["descriptor"], c.sub("descriptor"), {{"storage", false}, {"uniform", true}});
  MOE_CHECK(!b.uniform || b.access == Access::In, c.str() << ": a uniform buffer is read-only: access \"in\"");
  const int kinds =
      int(j.contains("tensor")) + int(j.contains("pack")) + int(j.contains("scratch")) + int(j.contains("generate"));
  MOE_CHECK(kinds == 1, c.str() << ": expected exactly one of \"tensor\", \"pack\" and \"scratch\", found "
                                << (kinds == 0 ? "none" : "several")
                                << " (a binding may also be \"generate\" alone, or an alias: \"same_as\")");
  if (j.contains("size")) b.size = get_expr(j["size"], c.sub("size"));
  if (j.contains("fill"))
    b.fill_zero = get_enum<bool>(j["fill"], c.sub("fill"), {{"poison", false}, {"zero", true}});
  if (j.contains("scratch")) {
    for (const char* k : {"from", "shape", "strides", "tensor_strides", "offset", "becomes", "size", "fill"})
      MOE_CHECK(!j.contains(k), c.str() << ": \"" << k << "\" does not apply to a scratch buffer");
    b.scratch = get_expr(j["scratch"], c.sub("scratch"));
    if (j.contains("name")) b.scratch_name = get_string(j["name"], c.sub("name"));
    // A named scratch buffer may be read only (the last pass of a sequence reads the partials an
    // earlier pass wrote); an unnamed one would be read before anything wrote it.
    MOE_CHECK(b.access != Access::In || !b.scratch_name.empty(),
              c.str() << ": an unnamed scratch buffer is written by the kernel: access \"out\" or \"inout\" (a "
                      << "named one, shared by a sequence, may be \"in\")");
    b.tensor = b.scratch_name.empty() ? "scratch" : "scratch " + b.scratch_name;
    return b;
  }
  MOE_CHECK(!j.contains("name"), c.str() << ": \"name\" applies only to a scratch buffer");
  if (j.contains("pack")) {
    for (const char* k : {"from", "shape", "strides", "tensor_strides", "offset", "becomes"})
      MOE_CHECK(!j.contains(k), c.str() << ": \"" << k << "\" belongs in a pack part, not on the pack binding");
    const json& p = j["pack"];
    MOE_CHECK(p.is_array() && !p.empty(), c.sub("pack").str() << ": expected a non-empty array of parts, found " << type_name(p));
    b.pack = true;
    std::string names;
    for (size_t i = 0; i < p.size(); ++i) {
      b.parts.push_back(parse_part(p[i], c.sub("pack").sub(idx(i)), b.access));
      const ViewSpec& part = b.parts.back();
      names += (names.empty() ? "" : ", ") +
               (!part.tensor.empty() ? part.tensor : !part.value.empty() ? part.value : "generate(" + part.generate + ")");
    }
    b.tensor = "pack(" + names + ")";
    return b;
  }
  ViewSpec v;
  v.type = b.type, v.type_declared = true;
  if (j.contains("generate")) {
    parse_generate(j, c, b.access, v);
    b.tensor = "generate(" + v.generate + ")";
    b.parts.push_back(v);
    return b;
  }
  v.tensor = get_string(j["tensor"], c.sub("tensor"));
  parse_view_keys(j, c, v);
  if (j.contains("becomes")) {
    MOE_CHECK(b.access == Access::InOut, c.sub("becomes").str() << ": an in-place result needs access \"inout\"");
    v.becomes = get_string(j["becomes"], c.sub("becomes"));
    MOE_CHECK(v.becomes != v.tensor, c.sub("becomes").str() << ": \"" << v.becomes << "\" is the tensor itself; "
                                                            << "a plain \"inout\" binding says that");
  }
  b.tensor = v.tensor;
  b.parts.push_back(v);
  return b;
}

// "let": {"name": "expr", ...}, ordered so that each uses only variables and earlier lets (a
// name read by a let that is no let is taken to be an op or device variable, checked per case).
std::vector<std::pair<std::string, std::string>> parse_lets(const json& j, const Ctx& c) {
  MOE_CHECK(j.is_object(), c.str() << ": expected an object of name: expression, found " << type_name(j));
  std::map<std::string, std::string> pending;
  for (const auto& [name, v] : j.items()) {
    MOE_CHECK(!name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                  std::all_of(name.begin(), name.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }),
              c.str() << ": \"" << name << "\" is not a name (letters, digits, _)");
    pending[name] = get_expr(v, c.sub(name));
  }
  std::vector<std::pair<std::string, std::string>> out;
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      bool ready = true;
      for (const std::string& n : expr_names(it->second)) ready = ready && !pending.count(n);
      if (ready) {
        out.emplace_back(it->first, it->second);
        it = pending.erase(it), progress = true;
      } else {
        ++it;
      }
    }
    if (!progress) {
      std::string names;
      for (const auto& [n, e] : pending) names += (names.empty() ? "" : ", ") + n;
      MOE_FAIL(c.str() << ": the lets " << names << " depend on each other in a cycle");
    }
  }
  return out;
}

// "conventions": {"field": "expr", ...}: fields of the kernel's one op that its params list as
// conventions (compare/cases/conventions.h); the values are checked per case, when evaluated.
Conventions parse_conventions(const json& j, const Ctx& c, const std::vector<std::string>& ops) {
  MOE_CHECK(j.is_object(), c.str() << ": expected an object of field: expression, found " << type_name(j));
  MOE_CHECK(ops.size() == 1, c.str() << ": conventions apply to a kernel of one op, found " << ops.size() << " ops");
  const std::vector<std::string> known = op_conventions(ops[0]);
  Conventions out;
  for (const auto& [name, v] : j.items()) {
    MOE_CHECK(std::count(known.begin(), known.end(), name),
              c.str() << ": unknown convention \"" << name << "\" (" << describe_conventions(ops[0]) << ")");
    out[name] = get_expr(v, c.sub(name));
  }
  return out;
}

PushConstant parse_push(const json& j, const Ctx& c) {
  only_keys(j, {"name", "type", "offset", "value"}, c);
  PushConstant p;
  p.name = get_string(need(j, "name", c), c.sub("name"));
  p.type = get_enum<std::string>(need(j, "type", c), c.sub("type"), {{"u32", "u32"}, {"i32", "i32"}, {"f32", "f32"}});
  // Vulkan guarantees 128 bytes of push constants (maxPushConstantsSize); 4096 is far above any
  // device and only rejects nonsense.
  p.offset = get_u32(need(j, "offset", c), c.sub("offset"), 4096);
  // Every member type is 32-bit; std430/scalar layout puts them on 4-byte boundaries.
  MOE_CHECK(p.offset % 4 == 0, c.sub("offset").str() << ": expected a multiple of 4 (a 32-bit " << p.type
                                                      << "), found " << p.offset);
  p.value = get_expr(need(j, "value", c), c.sub("value"));
  return p;
}

template <class T, class F>
std::vector<T> parse_array(const json& obj, const char* key, const Ctx& c, F&& parse_one) {
  std::vector<T> out;
  if (!obj.contains(key)) return out;
  const json& a = obj[key];
  Ctx ca = c.sub(key);
  MOE_CHECK(a.is_array(), ca.str() << ": expected an array, found " << type_name(a));
  for (size_t i = 0; i < a.size(); ++i) out.push_back(parse_one(a[i], ca.sub(idx(i))));
  return out;
}

// "same_as": each alias names a declared binding; a chain of aliases resolves to its root (a
// cycle is an error), and the alias takes the root's access, type and name for messages.
void resolve_aliases(std::vector<ManifestBinding>& bs, const Ctx& kc) {
  auto find = [&](int64_t number) -> const ManifestBinding* {
    for (const ManifestBinding& b : bs)
      if (int64_t{b.binding} == number) return &b;
    return nullptr;
  };
  for (ManifestBinding& b : bs) {
    if (b.same_as < 0) continue;
    const ManifestBinding* root = &b;
    std::string path = std::to_string(b.binding);
    for (size_t hops = 0; root->same_as >= 0; ++hops) {
      const ManifestBinding* next = find(root->same_as);
      MOE_CHECK(next, kc.str() << ": binding " << b.binding << ": same_as " << root->same_as
                               << " is not a binding of this kernel");
      path += " -> " + std::to_string(next->binding);
      MOE_CHECK(hops < bs.size() && next != &b, kc.str() << ": binding " << b.binding << ": same_as forms a cycle ("
                                                         << path << ")");
      root = next;
    }
    b.same_as = root->binding, b.access = root->access, b.type = root->type, b.uniform = root->uniform;
    b.tensor = "same_as " + std::to_string(root->binding) + " (" + root->tensor + ")";
  }
}

// "bindings": at least one, no binding number twice, no tensor twice in its own layout, and
// something written.
std::vector<ManifestBinding> parse_bindings(const json& j, const Ctx& kc) {
  std::vector<ManifestBinding> bs = parse_array<ManifestBinding>(j, "bindings", kc, parse_binding);
  MOE_CHECK(!bs.empty(), kc.str() << ": \"bindings\" is missing or empty; a kernel reads and writes buffers");
  for (size_t a = 0; a < bs.size(); ++a)
    for (size_t b = a + 1; b < bs.size(); ++b) {
      MOE_CHECK(bs[a].binding != bs[b].binding,
                kc.str() << ": bindings[" << a << "] and bindings[" << b << "] both use binding " << bs[a].binding);
      // The same tensor twice in its own layout is a typo; through views (the K rows of e as K
      // bindings) it is how engines bind it, and so is a state read from one buffer ("in") and
      // written to another ("out").
      const bool split_state = (bs[a].access == Access::In && bs[b].access == Access::Out) ||
                               (bs[a].access == Access::Out && bs[b].access == Access::In);
      MOE_CHECK(!(bs[a].plain() && bs[b].plain() && bs[a].tensor == bs[b].tensor && !split_state),
                kc.str() << ": bindings[" << a << "] and bindings[" << b << "] both bind tensor \"" << bs[a].tensor
                         << "\"");
    }
  resolve_aliases(bs, kc);
  MOE_CHECK(std::any_of(bs.begin(), bs.end(), [](const ManifestBinding& b) { return b.access != Access::In; }),
            kc.str() << ": no binding has access \"out\" or \"inout\"; nothing could be compared");
  return bs;
}

// "push_constants": no name and no offset twice.
std::vector<PushConstant> parse_push_constants(const json& j, const Ctx& kc) {
  std::vector<PushConstant> pcs = parse_array<PushConstant>(j, "push_constants", kc, parse_push);
  for (size_t a = 0; a < pcs.size(); ++a)
    for (size_t b = a + 1; b < pcs.size(); ++b) {
      const auto &pa = pcs[a], &pb = pcs[b];
      MOE_CHECK(pa.name != pb.name, kc.str() << ": push_constants[" << a << "] and [" << b << "] are both named \"" << pa.name << "\"");
      MOE_CHECK(pa.offset != pb.offset, kc.str() << ": push constants \"" << pa.name << "\" and \"" << pb.name
                                                 << "\" both at offset " << pa.offset);
    }
  return pcs;
}

// "subgroup_sizes": "driver" (not pinned: *driver = true), "any" (empty: any size) or a non-empty
// array of powers of two.
std::vector<uint32_t> parse_subgroup_sizes(const json& j, const Ctx& kc, bool* driver) {
  const json& s = j["subgroup_sizes"];
  Ctx sc = kc.sub("subgroup_sizes");
  *driver = false;
  if (s.is_string()) {
    *driver = s.get<std::string>() == "driver";
    MOE_CHECK(*driver || s.get<std::string>() == "any",
              sc.str() << ": expected \"driver\", \"any\" or an array of sizes, found \"" << s.get<std::string>() << "\"");
    return {};
  }
  std::vector<uint32_t> sizes = parse_array<uint32_t>(j, "subgroup_sizes", kc, [](const json& v, const Ctx& vc) {
    // Vulkan subgroup sizes are powers of two in [1, 128] (VkPhysicalDeviceSubgroupProperties).
    uint32_t n = get_u32(v, vc, 128);
    MOE_CHECK(n >= 1 && (n & (n - 1)) == 0, vc.str() << ": expected a power of two in [1, 128], found " << n);
    return n;
  });
  MOE_CHECK(!sizes.empty(), sc.str() << ": expected \"driver\", \"any\" or a non-empty array, found []");
  return sizes;
}

// "differences": [{"when": "<expression>", "why": "<text>"}] (docs/manifests.md "Declared differences").
Difference parse_difference(const json& j, const Ctx& c) {
  only_keys(j, {"when", "why"}, c);
  Difference d;
  d.when = get_expr(need(j, "when", c), c.sub("when"));
  d.why = get_string(need(j, "why", c), c.sub("why"));
  return d;
}

KernelEntry parse_kernel(const json& j, const Ctx& c, const fs::path& dir, int64_t* declared_pc_size,
                         const std::shared_ptr<const SourceFiles>& files) {
  only_keys(j,
            {"name", "ops", "spirv", "glsl", "glsl_target", "defines", "entry", "bindings", "push_constants",
             "push_constant_size", "specialization", "dispatch", "limits", "accumulation", "subgroup_sizes", "let",
             "access_checks", "differences", "conventions"},
            c);
  KernelEntry k;
  k.name = get_string(need(j, "name", c), c.sub("name"));
  Ctx kc{c.prefix + " '" + k.name + "'", ""};

  k.ops = parse_array<std::string>(j, "ops", kc, [&](const json& o, const Ctx& oc) {
    std::string op = get_string(o, oc);
    MOE_CHECK(known_ops().count(op), oc.str() << ": unknown op \"" << op << "\" (known: " << join(known_ops(), ", ") << ")");
    return op;
  });
  MOE_CHECK(j.contains("ops"), kc.str() << ": missing required key \"ops\"");
  MOE_CHECK(!k.ops.empty(), kc.sub("ops").str() << ": expected at least one op, found []");

  bool has_spv = j.contains("spirv"), has_glsl = j.contains("glsl");
  MOE_CHECK(has_spv != has_glsl, kc.str() << ": expected exactly one of \"spirv\" and \"glsl\", found "
                                          << (has_spv ? "both" : "neither"));
  if (j.contains("glsl_target")) {
    MOE_CHECK(has_glsl, kc.str() << ": \"glsl_target\" applies only to a \"glsl\" source");
    k.glsl_target = get_enum<std::string>(j["glsl_target"], kc.sub("glsl_target"),
                                          {{"vulkan1.2", "vulkan1.2"}, {"vulkan1.3", "vulkan1.3"}});
  }
  if (j.contains("defines")) {
    MOE_CHECK(has_glsl, kc.str() << ": \"defines\" applies only to a \"glsl\" source");
    Ctx dc = kc.sub("defines");
    MOE_CHECK(j["defines"].is_object(), dc.str() << ": expected an object, found " << type_name(j["defines"]));
    for (const auto& [name, v] : j["defines"].items()) {
      // A number is accepted as its text: {"BLOCK": 256} means -DBLOCK=256.
      k.defines[name] = v.is_number_integer() ? std::to_string(v.get<int64_t>()) : get_string(v, dc.sub(name), false);
    }
  }
  if (j.contains("entry")) k.entry = get_string(j["entry"], kc.sub("entry"));
  if (j.contains("access_checks")) {
    MOE_CHECK(j["access_checks"].is_boolean(),
              kc.sub("access_checks").str() << ": expected true or false, found " << type_name(j["access_checks"]));
    k.access_checks = j["access_checks"].get<bool>();
  }

  k.bindings = parse_bindings(j, kc);
  k.push_constants = parse_push_constants(j, kc);
  *declared_pc_size = -1;  // not declared
  if (j.contains("push_constant_size"))
    *declared_pc_size = get_u32(j["push_constant_size"], kc.sub("push_constant_size"), 4096);

  k.specialization = parse_array<SpecEntry>(j, "specialization", kc, [](const json& s, const Ctx& sc) {
    only_keys(s, {"id", "value"}, sc);
    SpecEntry e;
    e.id = get_u32(need(s, "id", sc), sc.sub("id"));
    e.value = get_expr(need(s, "value", sc), sc.sub("value"));
    return e;
  });
  for (size_t a = 0; a < k.specialization.size(); ++a)
    for (size_t b = a + 1; b < k.specialization.size(); ++b)
      MOE_CHECK(k.specialization[a].id != k.specialization[b].id,
                kc.str() << ": specialization[" << a << "] and [" << b << "] both set id " << k.specialization[a].id);

  if (j.contains("dispatch")) {
    Ctx dc = kc.sub("dispatch");
    const json& d = j["dispatch"];
    MOE_CHECK(d.is_array() && d.size() == 3, dc.str() << ": expected an array of 3 expressions (x, y, z), found " << type_name(d));
    for (int i = 0; i < 3; ++i) k.dispatch[i] = get_expr(d[i], dc.sub(idx(i)));
  } else {
    MOE_FAIL(kc.str() << ": missing required key \"dispatch\" (workgroup counts, e.g. [\"rows\", \"1\", \"1\"])");
  }
  k.limits = parse_array<std::string>(j, "limits", kc, get_expr);
  if (j.contains("conventions")) k.conventions = parse_conventions(j["conventions"], kc.sub("conventions"), k.ops);
  if (j.contains("let")) k.lets = parse_lets(j["let"], kc.sub("let"));
  if (j.contains("accumulation"))
    k.accumulation = get_enum<std::string>(j["accumulation"], kc.sub("accumulation"), {{"f32", "f32"}, {"f16", "f16"}, {"f64", "f64"}});
  // Absent: left to the driver, as engines leave it for most kernels (docs/manifests.md "Subgroup size").
  k.driver_subgroup = true;
  if (j.contains("subgroup_sizes")) k.subgroup_sizes = parse_subgroup_sizes(j, kc, &k.driver_subgroup);
  k.differences = parse_array<Difference>(j, "differences", kc, parse_difference);

  // The code: paths are relative to the manifest's folder.
  const char* key = has_spv ? "spirv" : "glsl";
  std::string rel = get_string(j[key], kc.sub(key));
  fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : dir / rel;
  k.source_path = fs::absolute(p).lexically_normal().string();
  k.from_glsl = has_glsl;
  k.files = files;
  try {
    if (has_spv) k.spirv = read_spirv(k.source_path, *files);
    else k.spirv = compile_glsl(files->read(k.source_path, "glsl"), k.source_path, k, false, true);
  } catch (const Error& e) {
    MOE_FAIL(kc.sub(key).str() << ": " << e.what());
  }
  return k;
}

}  // namespace

const KernelEntry* Manifest::find_op(const std::string& op) const {
  for (const auto& k : kernels)
    if (k.ops.size() == 1 && k.ops[0] == op) return &k;
  return nullptr;
}

namespace {

// "sequences": each names an op and the kernels that compute it in order. `filtered`: the
// manifest was loaded for some kernels only, so sequences of others are left out.
std::vector<KernelSequence> parse_sequences(const json& j, const Ctx& top, const Manifest& m, bool filtered) {
  const Ctx c = top.sub("sequences");
  MOE_CHECK(j.is_array(), c.str() << ": expected an array, found " << type_name(j));
  std::vector<KernelSequence> out;
  std::set<std::string> used;
  for (size_t i = 0; i < j.size(); ++i) {
    const Ctx sc = c.sub(idx(i));
    only_keys(j[i], {"name", "op", "kernels"}, sc);
    KernelSequence s;
    s.name = get_string(need(j[i], "name", sc), sc.sub("name"));
    s.op = get_string(need(j[i], "op", sc), sc.sub("op"));
    MOE_CHECK(known_ops().count(s.op), sc.sub("op").str() << ": unknown op \"" << s.op << "\"");
    s.kernels = parse_array<std::string>(j[i], "kernels", sc, [](const json& k, const Ctx& kc) { return get_string(k, kc); });
    MOE_CHECK(s.kernels.size() >= 2, sc.sub("kernels").str() << ": a sequence needs at least two kernels");
    bool all_loaded = true;
    for (const std::string& name : s.kernels) {
      const auto k = std::find_if(m.kernels.begin(), m.kernels.end(), [&](const KernelEntry& e) { return e.name == name; });
      if (k == m.kernels.end() && filtered) {
        all_loaded = false;
        continue;
      }
      MOE_CHECK(k != m.kernels.end(), sc.sub("kernels").str() << ": no kernel named \"" << name << "\"");
      MOE_CHECK(k->ops == std::vector<std::string>{s.op}, sc.sub("kernels").str() << ": kernel \"" << name
                                                          << "\" must have \"ops\": [\"" << s.op << "\"]");
      MOE_CHECK(used.insert(name).second, sc.sub("kernels").str() << ": kernel \"" << name
                                                                  << "\" is in two sequences (or twice in one)");
      // The kernels compute one op on the same cases: they must write it the same way.
      const auto first = std::find_if(m.kernels.begin(), m.kernels.end(),
                                      [&](const KernelEntry& e) { return e.name == s.kernels[0]; });
      MOE_CHECK(first == m.kernels.end() || k->conventions == first->conventions,
                sc.sub("kernels").str() << ": kernel \"" << name << "\" declares other conventions than \""
                                        << first->name << "\" (" << conventions_text(k->conventions) << " versus "
                                        << conventions_text(first->conventions)
                                        << "); the kernels of a sequence must declare the same");
    }
    if (all_loaded) out.push_back(std::move(s));
  }
  return out;
}

// The folder relative shader paths start from: the manifest's own, or the engine checkout
// given with --kernels-root when the manifest says "sources": "kernels_root".
fs::path sources_dir(const json& j, const Ctx& top, const std::string& path, const std::string& kernels_root) {
  const bool rooted = j.contains("sources") &&
                      get_enum<bool>(j["sources"], top.sub("sources"), {{"manifest", false}, {"kernels_root", true}});
  if (!rooted) {
    MOE_CHECK(kernels_root.empty(), path << ": --kernels-root " << kernels_root
                                          << " was given, but this manifest names its shaders relative to its own folder"
                                             " (it has no \"sources\": \"kernels_root\")");
    return fs::absolute(fs::path(path)).parent_path();
  }
  MOE_CHECK(!kernels_root.empty(), path << ": its shaders are in an engine checkout (\"sources\": \"kernels_root\"):"
                                           " pass --kernels-root <the checkout's root folder>");
  MOE_CHECK(fs::is_directory(kernels_root), path << ": --kernels-root " << kernels_root << ": not a directory");
  return fs::absolute(fs::path(kernels_root));
}

// "mutate_includes": paths relative to the shaders' folder, each an existing file.
std::vector<std::string> parse_mutate_includes(const json& j, const Ctx& top, const fs::path& dir,
                                               const SourceFiles& files) {
  const Ctx c = top.sub("mutate_includes");
  MOE_CHECK(j.is_array(), c.str() << ": expected an array of paths, found " << type_name(j));
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string rel = get_string(j[i], c.sub(idx(i)));
    const std::string p = (fs::path(rel).is_absolute() ? fs::path(rel) : dir / rel).lexically_normal().string();
    MOE_CHECK(files.find(p, "mutate_includes"), c.sub(idx(i)).str() << ": no file '" << p << "'");
    MOE_CHECK(std::find(out.begin(), out.end(), p) == out.end(), c.sub(idx(i)).str() << ": '" << rel << "' is listed twice");
    out.push_back(p);
  }
  return out;
}

}  // namespace

Manifest load_manifest(const std::string& path, const std::set<std::string>* only,
                       const std::shared_ptr<const SourceFiles>& files, const std::string& kernels_root) {
  std::string text = files->read(path, "manifest");
  json j;
  try {
    // Comments (// and /* */) are allowed: engine authors annotate their manifests.
    j = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
    MOE_FAIL(path << ": malformed JSON: " << e.what());
  }
  Ctx top{path, ""};
  only_keys(j, {"name", "version", "sources", "kernels", "sequences", "mutate_includes"}, top);
  Manifest m;
  m.path = path;
  m.name = get_string(need(j, "name", top), top.sub("name"));
  // Version 1 is the only format so far; a newer file must not be half-understood.
  uint32_t version = get_u32(need(j, "version", top), top.sub("version"));
  MOE_CHECK(version == 1, path << ": version: expected 1, found " << version);
  const json& ks = need(j, "kernels", top);
  MOE_CHECK(ks.is_array() && !ks.empty(), path << ": kernels: expected a non-empty array, found " << type_name(ks));
  const fs::path dir = sources_dir(j, top, path, kernels_root);
  for (size_t i = 0; i < ks.size(); ++i) {
    // A worker loads only the kernels of its plan (the whole file was checked by the parent).
    if (only && ks[i].is_object() && ks[i].contains("name") && ks[i]["name"].is_string() &&
        !only->count(ks[i]["name"].get<std::string>()))
      continue;
    Ctx kc{path + ": kernel " + std::to_string(i), ""};
    int64_t declared_pc_size = -1;
    KernelEntry k = parse_kernel(ks[i], kc, dir, &declared_pc_size, files);
    for (const auto& other : m.kernels)
      MOE_CHECK(other.name != k.name, kc.str() << ": kernel name \"" << k.name << "\" is used twice");
    std::string where = path + ": kernel " + std::to_string(i);
    reflect_and_check(k, where);
    MOE_CHECK(declared_pc_size < 0 || declared_pc_size == int64_t{k.push_constant_size},
              where << " '" << k.name << "': push_constant_size: manifest declares " << declared_pc_size
                    << " bytes, the shader's push-constant block is " << k.push_constant_size << " bytes");
    m.kernels.push_back(std::move(k));
  }
  if (j.contains("sequences")) m.sequences = parse_sequences(j["sequences"], top, m, only != nullptr);
  if (j.contains("mutate_includes")) m.mutate_includes = parse_mutate_includes(j["mutate_includes"], top, dir, *files);
  return m;
}

const KernelSequence* Manifest::sequence_of(const std::string& kernel) const {
  for (const KernelSequence& s : sequences)
    if (std::count(s.kernels.begin(), s.kernels.end(), kernel)) return &s;
  return nullptr;
}

}  // namespace moe::compare
