// Writes the seed corpora fuzz/corpus/<format>/ (docs/fuzzing.md): small valid inputs of every
// format, made by the project's own writers from the fuzz fixtures (fuzz/support.h), the
// bundled and foreign manifests and the tap writer's mapping file. Deterministic: run again, the
// same files. Usage: fuzz_make_seeds OUT_DIR
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "compare/cases/cases.h"
#include "compare/run/case_file.h"
#include "compare/shaders/bundled.h"
#include "core/check.h"
#include "fuzz/support.h"
#include "oracle/dump.h"
#include "oracle/forward.h"
#include "oracle/gguf.h"
#include "oracle/gguf_convert.h"
#include "oracle/safetensors.h"
#include "oracle/snapshot.h"
#include "oracle/synth.h"

namespace moe::fuzz {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

fs::path g_out;

void seed(const std::string& format, const std::string& name, std::string_view bytes) {
  fs::create_directories(g_out / format);
  write_file(g_out / format / name, bytes);
}

std::string join_parts(const std::vector<std::string>& parts) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? std::string(kSplit) : "") + parts[i];
  return s;
}

std::string compact(const std::string& json_text) { return json::parse(json_text).dump(); }

// A safetensors file's bytes, written by the project's writer.
std::string safetensors_bytes(const std::vector<TensorOut>& t, const std::map<std::string, std::string>& meta) {
  const fs::path p = scratch() / "seed.safetensors";
  write_safetensors(p.string(), t, meta);
  std::string bytes = read_file(p);
  fs::remove(p);
  return bytes;
}

void safetensors_seeds() {
  const uint8_t raw[16] = {0, 0, 128, 63, 0, 0, 0, 64, 1, 2, 3, 4, 5, 6, 7, 8};  // 1.0f, 2.0f, then bytes
  std::vector<TensorOut> all;
  const std::pair<DType, std::vector<int64_t>> kinds[] = {
      {DType::F32, {2}}, {DType::F64, {2}}, {DType::F16, {2, 2}}, {DType::BF16, {4}}, {DType::U8, {3}},
      {DType::I8, {1, 2}}, {DType::U16, {2}}, {DType::I16, {2}}, {DType::U32, {2}}, {DType::I32, {1}},
      {DType::U64, {1}}, {DType::I64, {2}}, {DType::BOOL, {4}}};
  int i = 0;
  for (const auto& [dt, shape] : kinds) all.push_back({"t" + std::to_string(i++) + "." + dtype_name(dt), dt, shape, raw});
  all.push_back({"scalar", DType::F32, {}, raw});
  all.push_back({"empty", DType::F32, {0, 3}, raw});
  seed("safetensors", "dtypes.safetensors", safetensors_bytes(all, {{"format", "pt"}, {"note", "seed"}}));
  seed("safetensors", "one_f32.safetensors", safetensors_bytes({{"x", DType::F32, {2}, raw}}, {}));
  seed("safetensors", "no_tensors.safetensors", safetensors_bytes({}, {{"format", "mlx"}}));
}

// A dump of the small model: `taps` over 2 prefill tokens, on `backend`.
std::string small_dump(const char* backend, const std::vector<std::string>& taps) {
  const Model& m = *fixtures().model;
  const std::unique_ptr<OpBackend> be = make_cpu_backend(backend);
  Forward f(m, *be);
  ModelState st = ModelState::make(m.config(), 2);
  DumpSink sink(taps);
  const std::vector<int32_t> tokens{3, 11};
  f.run(tokens, st, &sink);
  const fs::path p = scratch() / "seed_dump.safetensors";
  sink.write(p.string(), {{"backend", backend}});
  std::string bytes = read_file(p);
  fs::remove(p);
  return bytes;
}

// The same dump with every tensor renamed by `rename` ("" drops it); row tensors may be split
// per token when rename gives "t{token}." names (the caller's business: here whole tensors).
std::string renamed(const std::string& dump, const std::map<std::string, std::string>& names) {
  const fs::path p = scratch() / "seed_in.safetensors";
  write_file(p, dump);
  std::string out;
  {
    const SafetensorsFile f(p.string());
    std::vector<TensorOut> t;
    for (const std::string& n : f.names_in_file_order()) {
      auto it = names.find(n);
      if (it == names.end()) continue;
      const TensorInfo& info = *f.find(n);
      t.push_back({it->second, info.dtype, info.shape, info.data});
    }
    out = safetensors_bytes(t, {{"engine", "seed"}});
  }
  fs::remove(p);
  return out;
}

// Tensor `name` of a dump ([T, cols] f32) as one tensor per row, named by `pattern` with {token}.
std::string token_rows(const std::string& dump, const std::string& name, const std::string& pattern) {
  const fs::path p = scratch() / "seed_in.safetensors";
  write_file(p, dump);
  std::string out;
  {
    const SafetensorsFile f(p.string());
    const TensorInfo& t = *f.find(name);
    const int64_t rows = t.shape[0], cols = t.numel() / rows;
    std::vector<std::string> names;
    std::vector<TensorOut> parts;
    for (int64_t r = 0; r < rows; ++r) {
      std::string n = pattern;
      n.replace(n.find("{token}"), 7, std::to_string(r));
      names.push_back(n);
    }
    for (int64_t r = 0; r < rows; ++r) parts.push_back({names[size_t(r)], DType::F32, {cols}, t.data + r * cols * 4});
    out = safetensors_bytes(parts, {});
  }
  fs::remove(p);
  return out;
}

void dump_seeds() {
  const std::vector<std::string> taps{"model.embed_tokens.out", "model.layers.0.input_layernorm.out",
                                      "model.layers.*.mlp.experts.*", "model.layers.1.out", "model.norm.out", "logits"};
  const std::string a = small_dump("ref32", taps), b = small_dump("ref64", taps);
  seed("safetensors", "dump.safetensors", a);
  seed("dump_diff", "same", join_parts({a, a}));
  seed("dump_diff", "ref32_ref64", join_parts({a, b}));
  const std::string engine = renamed(b, {{"model.embed_tokens.out", "token_embd"},
                                          {"model.layers.0.input_layernorm.out", "blk.0.attn_norm"},
                                          {"model.layers.1.mlp.experts.idx", "blk.1.ffn_idx"},
                                          {"model.layers.1.mlp.experts.weight", "blk.1.ffn_w"},
                                          {"logits", "result_output"}});
  const std::string map = json{{"version", 1},
                               {"map", {{"token_embd", "model.embed_tokens.out"},
                                        {"blk.{layer}.attn_norm", "model.layers.{layer}.input_layernorm.out"},
                                        {"blk.{layer}.ffn_idx", "model.layers.{layer}.mlp.experts.idx"},
                                        {"blk.{layer}.ffn_w", "model.layers.{layer}.mlp.experts.weight"},
                                        {"result_output", "logits"}}}}
                              .dump();
  seed("dump_diff", "engine_names_map", join_parts({a, engine, map}));
  seed("dump_diff", "token_rows_map", join_parts({a, token_rows(b, "logits", "t{token}.result_output"),
                                                  R"({"version": 1, "map": {"t{token}.result_output": "logits"}})"}));
}


void model_seeds() {
  const Fixtures& fx = fixtures();
  const std::string cfg = compact(read_file(fx.mlx_single / "config.json"));
  seed("mlx_model", "small_no_index", cfg);
  seed("mlx_model", "small_index", join_parts({cfg, compact(fx.mlx_index)}));
  seed("mlx_model", "next_golden", join_parts({compact(fx.next_config), compact(fx.next_index)}));
  // The same model described the other ways config.json files do: flat text fields, layer kinds
  // from full_attention_interval, quantization_config, a rope_theta at the top.
  json flat = json::parse(cfg);
  json text = flat["text_config"];
  flat.erase("text_config");
  for (auto& [k, v] : text.items())
    if (k != "layer_types" && k != "rope_parameters") flat[k] = v;
  flat["full_attention_interval"] = 2;
  flat["rope_theta"] = 1e7;
  flat["quantization_config"] = flat["quantization"];
  flat.erase("quantization");
  seed("mlx_model", "small_flat", flat.dump());

  json mf = json::parse(fx.mf_json);
  mf["model"] = "fixture";  // not the scratch path
  const std::string mfj = mf.dump();
  seed("moeflux", "json_only", mfj);
  seed("moeflux", "json_bin", join_parts({mfj, fx.mf_bin}));
  std::vector<std::string> all{mfj, fx.mf_bin};
  all.insert(all.end(), fx.mf_layers.begin(), fx.mf_layers.end());
  seed("moeflux", "all_files", join_parts(all));
}

void snapshot_seeds() {
  const Model& m = *fixtures().model;
  const std::unique_ptr<OpBackend> be = make_cpu_backend("ref32");
  Forward f(m, *be);
  ModelState st = ModelState::make(m.config(), 4);
  const int32_t tokens[] = {1, 7, 12};
  for (int n = 0; n <= 3; ++n) {
    if (n > 0) f.run(std::span<const int32_t>(&tokens[n - 1], 1), st);
    if (n == 2) continue;
    for (int version : {1, 2}) {
      const std::vector<uint8_t> b = snapshot_save(m.config(), st, version);
      seed("snapshot", "v" + std::to_string(version) + "_after_" + std::to_string(n),
           std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
    }
  }
}

// Every expression of a manifest entry (the string values of the expression fields, lets).
void collect_exprs(const json& j, const std::string& key, std::set<std::string>& out) {
  static const std::set<std::string> fields{"dispatch", "limits", "value", "from", "shape", "strides",
                                            "tensor_strides", "offset", "size", "scratch"};
  if (j.is_string() && fields.count(key)) out.insert(j.get<std::string>());
  if (j.is_object())
    for (const auto& [k, v] : j.items()) collect_exprs(v, key == "let" ? "value" : k, out);
  if (j.is_array())
    for (const auto& v : j) collect_exprs(v, key, out);
}

void manifest_seeds(std::set<std::string>& exprs) {
  const json bundled = json::parse(compare::bundled_manifest_json());
  for (const json& k : bundled["kernels"]) {
    collect_exprs(k, "", exprs);
    const json one{{"name", "seed"}, {"version", 1}, {"kernels", json::array({k})}};
    seed("manifest", "bundled_" + k["name"].get<std::string>() + ".json", one.dump());
  }
  for (const ForeignManifest& fm : foreign_manifests()) {
    std::ifstream in(fm.path);
    json m = json::parse(in, nullptr, true, /*ignore_comments=*/true);
    for (json& k : m["kernels"]) {
      collect_exprs(k, "", exprs);
      // The kernel's SPIR-V, compiled once per process by the target (support.h kernel_dir).
      k.erase("glsl"), k.erase("glsl_target"), k.erase("defines");
      k["spirv"] = foreign_spirv_name(fm.label, k["name"].get<std::string>());
    }
    seed("manifest", fm.label + ".json", m.dump());
  }
}

void expr_seeds(std::set<std::string> exprs) {
  for (const char* e : {"ceil_div(dim, 64) * 2", "pow(10000.0, -2.0 / 64)", "floor(log(dim) / log(2))",
                        "exp(1) + sqrt(2) - ceil(2.5)", "min(rows, max(1, dim / 7))", "!(dim > 1) || rows == 3",
                        "dim % 7 - -3", "(((rows)))", "1e5 * half", "big - 1", "huge * 0.5", "eps != 0 && zero == 0"})
    exprs.insert(e);
  int i = 0;
  for (const std::string& e : exprs) {
    char name[16];
    std::snprintf(name, sizeof name, "e%03d", i++);
    seed("expr", name, e);
  }
}

void case_seeds() {
  for (const char* op : {"rmsnorm", "argmax", "router_topk", "embedding", "residual_add", "dequant", "swiglu_expert"}) {
    const std::vector<compare::OpCase> cases = compare::make_cases(op, "remainders", 1);
    const compare::OpCase* best = nullptr;
    size_t best_words = SIZE_MAX;
    for (const compare::OpCase& c : cases) {
      size_t words = 0;
      for (const auto& [n, t] : c.tensors) words += t.words.size();
      if (c.steps.empty() && words < best_words) best = &c, best_words = words;
    }
    if (!best || best_words > 4096) continue;  // the corpus stays small
    compare::CaseFile cf{*best, "", op, {{"model", "seed"}, {"layer", "0"}}};
    const fs::path p = scratch() / "seed.case";
    compare::save_case_file(p.string(), cf);
    seed("case_file", std::string(op) + ".case", read_file(p));
    fs::remove(p);
  }
}

// GGUF files from the project's writer: metadata of every value type, float and block types.
void gguf_seeds() {
  const fs::path p = scratch() / "seed.gguf";
  const std::vector<float> f = {1, -2, 3.5f, 0.25f};
  const std::vector<uint8_t> q(2 * 34, 0x3C);
  std::vector<std::pair<std::string, GgufValue>> kv = {
      {"general.architecture", GgufValue::of_string("qwen3moe")},
      {"qwen3moe.block_count", GgufValue::of_u32(2)},
      {"qwen3moe.expert_count", GgufValue::of_u64(8)},
      {"qwen3moe.rope.freq_base", GgufValue::of_f32(1e6f)},
      {"flag", GgufValue::of_bool(false)},
      {"signed", GgufValue::of_i32(-3)},
      {"tokenizer.ggml.tokens", GgufValue::array_of(GgufType::STRING, {GgufValue::of_string("a"), GgufValue::of_string("b")})}};
  write_gguf(p.string(), kv, {{"output_norm.weight", 0, {4}, {reinterpret_cast<const uint8_t*>(f.data()), 16}},
                              {"blk.0.attn_q.weight", 8, {32, 2}, q}});
  seed("gguf", "qwen3moe_small.gguf", read_file(p));
  kv.push_back({"general.alignment", GgufValue::of_u32(64)});
  write_gguf(p.string(), kv, {});
  seed("gguf", "metadata_only_align64.gguf", read_file(p));
  fs::remove(p);
}

// GGUF models: the small model (qwen35moe, value heads tiled) and its Qwen3-Next twin (qwen3next:
// ssm_ba), as write_gguf_model writes them.
void gguf_model_seeds() {
  const Fixtures& fx = fixtures();
  const fs::path p = scratch() / "seed_model.gguf";
  write_gguf_model(*fx.model, p.string());
  seed("gguf_model", "small_qwen35moe.gguf", read_file(p));
  ModelConfig next = small_config();
  next.family = Family::Qwen3Next;
  const fs::path dir = scratch() / "seed_next_mlx";
  write_synthetic_mlx(next, 2, dir.string());
  write_gguf_model(*Model::load(dir.string()), p.string());
  seed("gguf_model", "small_qwen3next.gguf", read_file(p));
  fs::remove_all(dir);
  // deepseek2: ds3-tiny's shapes narrowed (hidden 64, vocab 16, 8 experts, 2 layers, the first dense).
  ModelConfig ds = synthetic_preset("ds3-tiny");
  ds.hidden = 64, ds.vocab = 16, ds.layers = 2, ds.experts = 8, ds.mla.n_group = 4, ds.mla.topk_group = 2;
  ds.layer_kinds.resize(2), ds.layer_moe.resize(2);
  ds.mla.mscale = ds.mla.mscale_all_dim;  // the one YaRN form deepseek2 holds
  write_synthetic_mlx(ds, 3, dir.string());
  write_gguf_model(*Model::load(dir.string()), p.string());
  seed("gguf_model", "small_deepseek2.gguf", read_file(p));
  fs::remove_all(dir);
  fs::remove(p);
}

void text_seeds() {
  const std::string map = read_file(fs::path(MOE_SOURCE_DIR) / "tests/tap_writer/engine_map.json");
  seed("tap_map", "engine_map.json", map);
  seed("tap_map", "engine_map_names",
       join_parts({map, "blk.3.attn_norm", "t12.result_output", "token_embd", "model.layers.0.mlp.experts.idx", "x"}));
  seed("tap_map", "placeholders", join_parts({R"({"version": 1, "map": {"L{layer}.E{expert}.out": "model.layers.{layer}.mlp.out", "t{token}.h{layer}": "model.layers.{layer}.out"}})",
                                             "L2.E7.out", "t3.h1", "t99999999999999.h1"}));
  const std::pair<const char*, const char*> tokens[] = {
      {"commas", "1,2,3"}, {"spaces", "5 17 300\n42\t7\n"}, {"one", "0"}, {"max", "2147483647"},
      {"crlf", "1,2\r\n3\r\n"}, {"mixed", " 9 ,10,\t11 \n"}};
  for (const auto& [name, text] : tokens) seed("tokens", name, text);
}

}  // namespace
}  // namespace moe::fuzz

int main(int argc, char** argv) {
  using namespace moe::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds OUT_DIR\n");
    return 2;
  }
  try {
    g_out = argv[1];
    safetensors_seeds();
    gguf_seeds();
    gguf_model_seeds();
    dump_seeds();
    model_seeds();
    snapshot_seeds();
    std::set<std::string> exprs;
    manifest_seeds(exprs);
    expr_seeds(exprs);
    case_seeds();
    text_seeds();
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
    return 2;
  }
  return 0;
}
