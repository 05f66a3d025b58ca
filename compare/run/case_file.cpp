#include "compare/run/case_file.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "oracle/json_read.h"
#include "oracle/safetensors.h"

namespace moe::compare {
using nlohmann::json;

namespace {

ElemType parse_type(const std::string& s, const std::string& where) {
  if (s == "f32") return ElemType::F32;
  if (s == "bf16") return ElemType::BF16;
  if (s == "u32") return ElemType::U32;
  if (s == "i32") return ElemType::I32;
  MOE_FAIL(where << ": element type '" << s << "', expected f32, bf16, u32 or i32");
}

Kind parse_kind(const std::string& s, const std::string& where) {
  for (Kind k : {Kind::Reduction, Kind::Elementwise, Kind::Exact, Kind::Indices})
    if (s == kind_name(k)) return k;
  MOE_FAIL(where << ": output kind '" << s << "' unknown");
}

// The truth of an integer output (indices, u32/i32 words) is compared as that integer type: every
// value must be one (a NaN or 1e300 has no int32 value; converting it is undefined behaviour).
void check_integer_truth(const std::vector<double>& truth, ElemType type, const OutputSpec& s, const std::string& path) {
  const bool u32 = type == ElemType::U32 && s.kind != Kind::Indices;
  if (!u32 && type != ElemType::I32 && s.kind != Kind::Indices) return;
  const int64_t lo = u32 ? 0 : INT32_MIN, hi = u32 ? int64_t(UINT32_MAX) : INT32_MAX;
  for (size_t i = 0; i < truth.size(); ++i)
    MOE_CHECK(std::isfinite(truth[i]) && std::floor(truth[i]) == truth[i] && truth[i] >= double(lo) && truth[i] <= double(hi),
              path << ": tensor 'truth/" << s.name << "'[" << i << "] = " << truth[i] << ", expected an integer in ["
                   << lo << ", " << hi << "] (the output is " << (u32 ? "u32" : "i32") << ")");
}

}  // namespace

void save_case_file(const std::string& path, const CaseFile& f) {
  const OpCase& c = f.c;
  MOE_CHECK(c.steps.empty(), "case file " << path << ": only single-step cases can be saved (op " << c.op << " has "
                                          << c.steps.size() << " steps)");
  json j;
  j["op"] = c.op, j["shape"] = c.shape, j["params"] = c.params, j["seed"] = c.seed, j["flops"] = c.flops;
  j["vars"] = json::object();
  for (const auto& [k, v] : c.vars) j["vars"][k] = v;
  j["tensors"] = json::object();
  std::vector<TensorOut> out;
  for (const auto& [name, t] : c.tensors) {
    j["tensors"][name] = {{"type", elem_type_name(t.type)}, {"elems", t.elems}, {"output", t.output}};
    out.push_back({"in/" + name, DType::U32, {int64_t(t.words.size())}, t.words.data()});
  }
  j["outputs"] = json::array();
  for (const auto& output : c.outputs) {
    // Named references, not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::string& name = output.first;
    const auto& s = output.second;
    j["outputs"].push_back({{"name", name}, {"kind", kind_name(s.kind)}, {"row", s.row}});
    auto add = [&](const std::string& prefix, const std::vector<double>& v) {
      if (!v.empty()) out.push_back({prefix + name, DType::F64, {int64_t(v.size())}, v.data()});
    };
    add("truth/", c.truth.at(name));
    add("bound/", s.bound);
    add("ulp/", s.ulp_budget);
    add("scores/", s.scores);
    add("score_bound/", s.score_bound);
  }
  j["plan"] = {{"manifest", f.manifest}, {"label", f.plan}};
  j["origin"] = f.origin;
  write_safetensors(path, out, {{"moeoracle_case", "1"}, {"case", j.dump()}}, "the case file");
}

CaseFile load_case_file(const std::string& path) {
  SafetensorsFile st(path);
  const auto& meta = st.metadata();
  MOE_CHECK(meta.count("moeoracle_case") && meta.count("case"),
            path << ": not a moeoracle case file (no moeoracle_case/case metadata)");
  MOE_CHECK(meta.at("moeoracle_case") == "1",
            path << ": case file version " << meta.at("moeoracle_case") << ", this build reads version 1");
  json j;
  try {
    j = json::parse(meta.at("case"));
  } catch (const json::exception& e) {
    MOE_FAIL(path << ": malformed case metadata: " << e.what());
  }
  CaseFile f;
  OpCase& c = f.c;
  try {
    c.op = j.at("op"), c.shape = j.at("shape"), c.params = j.at("params");
    c.seed = json_uint(j.at("seed"), path + ": case metadata: seed");
    c.flops = j.value("flops", 0.0);
    for (const auto& [k, v] : j.at("vars").items()) c.vars[k] = v.get<double>();
    for (const auto& [name, t] : j.at("tensors").items()) {
      HostTensor h;
      h.type = parse_type(t.at("type"), path + ": tensor '" + name + "'");
      h.elems = json_int(t.at("elems"), path + ": tensor '" + name + "': elems", 0), h.output = t.at("output");
      const TensorInfo* ti = st.find("in/" + name);
      MOE_CHECK(ti, path << ": tensor 'in/" << name << "' missing");
      MOE_CHECK(ti->dtype == DType::U32, path << ": tensor 'in/" << name << "': expected U32, found "
                                              << dtype_name(ti->dtype));
      const int64_t want = h.type == ElemType::BF16 ? (h.elems + 1) / 2 : h.elems;
      MOE_CHECK(ti->numel() == want, path << ": tensor 'in/" << name << "': expected " << want << " words, found "
                                          << ti->numel());
      h.words.resize(size_t(want));
      std::memcpy(h.words.data(), ti->data, ti->bytes);
      c.tensors[name] = std::move(h);
    }
    for (const json& o : j.at("outputs")) {
      OutputSpec s;
      s.name = o.at("name");
      s.kind = parse_kind(o.at("kind"), path + ": output '" + s.name + "'");
      s.row = o.contains("row") ? json_int(o["row"], path + ": output '" + s.name + "': row", 0) : 0;
      MOE_CHECK(c.tensors.count(s.name), path << ": output '" << s.name << "' names no tensor");
      const int64_t n = c.tensors.at(s.name).elems;
      auto get = [&](const std::string& prefix, bool required, int64_t want) {
        std::vector<double> v;
        const TensorInfo* ti = st.find(prefix + s.name);
        if (!ti) {
          MOE_CHECK(!required, path << ": tensor '" << prefix << s.name << "' missing");
          return v;
        }
        MOE_CHECK(ti->dtype == DType::F64, path << ": tensor '" << prefix << s.name << "': expected F64, found "
                                                << dtype_name(ti->dtype));
        MOE_CHECK(want < 0 || ti->numel() == want || ti->numel() == 1,
                  path << ": tensor '" << prefix << s.name << "': expected " << want << " (or 1) values, found "
                       << ti->numel());
        v.resize(size_t(ti->numel()));
        std::memcpy(v.data(), ti->data, ti->bytes);
        return v;
      };
      c.truth[s.name] = get("truth/", true, n);
      check_integer_truth(c.truth[s.name], c.tensors.at(s.name).type, s, path);
      s.bound = get("bound/", false, n);
      s.ulp_budget = get("ulp/", false, n);
      s.scores = get("scores/", false, -1);
      s.score_bound = get("score_bound/", false, -1);
      c.outputs[s.name] = std::move(s);
    }
    f.manifest = j.at("plan").at("manifest"), f.plan = j.at("plan").at("label");
    if (j.contains("origin"))
      for (const auto& [k, v] : j.at("origin").items()) f.origin[k] = v.is_string() ? v.get<std::string>() : v.dump();
  } catch (const json::exception& e) {
    MOE_FAIL(path << ": case metadata: " << e.what());
  }
  MOE_CHECK(!c.outputs.empty(), path << ": the case compares no output");
  return f;
}

}  // namespace moe::compare
