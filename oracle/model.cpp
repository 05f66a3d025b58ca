#include "oracle/model.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/check.h"
#include "oracle/gguf.h"
#include "oracle/json_read.h"

namespace moe {
namespace fs = std::filesystem;

namespace {

std::string layer_prefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

// Widens a 1-D BF16 or F32 tensor of `n` elements to f32 (exact).
std::vector<float> load_vector(const TensorTable& t, const std::string& name, int64_t n) {
  const TensorInfo& info = t.get(name);
  MOE_CHECK(info.numel() == n, info.file << ": tensor '" << name << "' has shape " << info.shape_string()
                                         << " (" << info.numel() << " elements), expected " << n << " elements");
  std::vector<float> v(static_cast<size_t>(n));
  if (info.dtype == DType::F32) {
    std::memcpy(v.data(), info.data, size_t(n) * 4);
  } else {
    MOE_CHECK(info.dtype == DType::BF16, info.file << ": tensor '" << name << "' has dtype " << dtype_name(info.dtype)
                                                   << ", expected BF16 or F32");
    for (int64_t i = 0; i < n; ++i) {
      bf16 u;
      std::memcpy(&u, info.data + 2 * i, 2);
      v[size_t(i)] = bf16_to_f32(u);
    }
  }
  return v;
}

void expect_tensor(const TensorInfo& info, DType dt, const std::vector<int64_t>& shape) {
  TensorInfo want;
  want.shape = shape;
  MOE_CHECK(info.dtype == dt && info.shape == shape,
            info.file << ": tensor '" << info.name << "' is " << dtype_name(info.dtype) << ' ' << info.shape_string()
                      << ", expected " << dtype_name(dt) << ' ' << want.shape_string());
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& dir) {
  std::unique_ptr<Model> m(new Model());
  if (fs::is_regular_file(dir) && is_gguf_file(dir)) {
    m->load_gguf(dir);
    return m;
  }
  m->table_ = open_checkpoint(dir);
  m->cfg_ = parse_model_config(m->table_.config, m->table_.config_source);
  m->resolve();
  return m;
}

// `lead` > 0: a stack of `lead` matrices (MLX experts), viewed as one [lead*rows, cols] matrix.
static QuantMatrix quant_matrix(const TensorTable& t, const std::string& base, int64_t rows, int64_t cols, int bits,
                                int group, int64_t lead = 0) {
  const TensorInfo& w = t.get(base + ".weight");
  const TensorInfo& s = t.get(base + ".scales");
  const TensorInfo& b = t.get(base + ".biases");
  MOE_CHECK(w.dtype == DType::U32, w.file << ": tensor '" << w.name << "' has dtype " << dtype_name(w.dtype)
                                          << ", expected U32 (MLX-quantized weight)");
  // The file's packed width tells its bits; it must agree with the config (or manifest).
  const int64_t words = w.shape.empty() ? 0 : w.shape.back();
  if (words * 32 != cols * bits && words > 0 && (words * 32) % cols == 0) {
    MOE_FAIL(w.file << ": tensor '" << w.name << "' packs " << words << " words per row = " << words * 32 / cols
                    << " bits for " << cols << " inputs, but the config says " << bits << " bits");
  }
  std::vector<int64_t> ws{rows, cols * bits / 32}, ss{rows, cols / group};
  if (lead > 0) ws.insert(ws.begin(), lead), ss.insert(ss.begin(), lead);
  expect_tensor(w, DType::U32, ws);
  expect_tensor(s, DType::BF16, ss);
  expect_tensor(b, DType::BF16, ss);
  // The kernels read the words and scales in place: a safetensors file may put a tensor at any
  // byte offset, a u32 needs 4-byte alignment (bf16: 2).
  for (const TensorInfo* t : {&w, &s, &b}) {
    const size_t align = dtype_size(t->dtype);
    MOE_CHECK(reinterpret_cast<uintptr_t>(t->data) % align == 0,
              t->file << ": tensor '" << t->name << "' data is not " << align << "-byte aligned (" << dtype_name(t->dtype)
                      << " is read in place; the writer must pad the offsets)");
  }
  QuantMatrix q;
  q.w = reinterpret_cast<const uint32_t*>(w.data);
  q.scales = reinterpret_cast<const bf16*>(s.data);
  q.biases = reinterpret_cast<const bf16*>(b.data);
  q.rows = (lead > 0 ? lead : 1) * rows;
  q.cols = cols;
  q.bits = bits;
  q.group_size = group;
  check_quant(q, "load", base);
  return q;
}

// Copies rows [r0, r0+n) of `src` to the end of `dst` (same cols/bits).
static void append_rows(QuantStorage& dst, const QuantMatrix& src, int64_t r0, int64_t n) {
  const int64_t wpr = src.words_per_row(), gpr = src.groups_per_row();
  dst.w.insert(dst.w.end(), src.w + r0 * wpr, src.w + (r0 + n) * wpr);
  dst.scales.insert(dst.scales.end(), src.scales + r0 * gpr, src.scales + (r0 + n) * gpr);
  dst.biases.insert(dst.biases.end(), src.biases + r0 * gpr, src.biases + (r0 + n) * gpr);
  dst.rows += n;
}

void Model::resolve() {
  const ModelConfig& c = cfg_;
  const TensorTable& t = table_;
  const int G = c.default_group;
  auto quant = [&](const std::string& module, int64_t rows, int64_t cols) {
    return quant_matrix(t, module, rows, cols, bits_of(module), G);
  };
  const int64_t d = c.hidden;

  // Provenance of the norms: mlx-lm folds +1 into zero-centred norms; a raw HF layout (conv1d
  // stored [C, 1, K]) has not (docs/ops/formats.md "MLX sanitize").
  for (int64_t i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[size_t(i)] != LayerKind::Linear) continue;
    const TensorInfo& conv = t.get(layer_prefix(i) + "linear_attn.conv1d.weight");
    norms_need_one_ = conv.shape.size() == 3 && conv.shape[1] == 1 && conv.shape[2] != 1;
    break;
  }
  auto norm = [&](const std::string& name, int64_t n) {
    std::vector<float> v = load_vector(t, name, n);
    if (norms_need_one_)
      for (float& x : v) x = 1.0f + x;
    return v;
  };

  embed_ = quant("model.embed_tokens", c.vocab, d);
  // Tied when absent (Qwen); DeepSeek-V3 says which in tie_word_embeddings, and an untied model
  // without lm_head is an error (get names the file and the tensor).
  const bool want_head = c.family == Family::DeepseekV3 ? !c.tie_word_embeddings : t.find("lm_head.weight") != nullptr;
  lm_head_ = want_head ? quant("lm_head", c.vocab, d) : embed_;
  final_norm_ = norm("model.norm.weight", d);

  check_packed_layout();
  layers_.resize(size_t(c.layers));
  experts_.resize(size_t(c.layers));
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string L = layer_prefix(i);
    LayerWeights& lw = layers_[size_t(i)];
    lw.kind = c.layer_kinds[size_t(i)];
    lw.moe = c.layer_moe[size_t(i)];
    lw.input_norm = norm(L + "input_layernorm.weight", d);
    lw.post_norm = norm(L + "post_attention_layernorm.weight", d);
    if (lw.kind == LayerKind::Linear) {
      resolve_linear(i);
    } else if (lw.kind == LayerKind::Mla) {
      resolve_mla(i);
    } else {
      const std::string A = L + "self_attn.";
      const int64_t H = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim;
      lw.full.q = quant(A + "q_proj", 2 * H * D, d);
      lw.full.k = quant(A + "k_proj", Hkv * D, d);
      lw.full.v = quant(A + "v_proj", Hkv * D, d);
      lw.full.o = quant(A + "o_proj", d, H * D);
      lw.full.q_norm = norm(A + "q_norm.weight", D);
      lw.full.k_norm = norm(A + "k_norm.weight", D);
    }
    const std::string M = L + "mlp.";
    if (lw.moe) {
      resolve_moe(i);
    } else {
      MOE_CHECK(c.dense_inter > 0, t.config_source << ": layer " << i << " is a dense MLP layer but intermediate_size is missing");
      lw.mlp.shared = {quant(M + "gate_proj", c.dense_inter, d), quant(M + "up_proj", c.dense_inter, d),
                       quant(M + "down_proj", d, c.dense_inter)};
    }
  }
}

// Linear attention (GatedDeltaNet) of layer i: the projections (Qwen3-Next's interleaved
// in_proj_qkvz / in_proj_ba regrouped into contiguous q|k|v, z, b, a), the conv and gate vectors.
void Model::resolve_linear(int64_t i) {
  const ModelConfig& c = cfg_;
  const TensorTable& t = table_;
  const int64_t d = c.hidden;
  auto quant = [&](const std::string& module, int64_t rows, int64_t cols) {
    return quant_matrix(t, module, rows, cols, bits_of(module), c.default_group);
  };
  LayerWeights& lw = layers_[size_t(i)];
  const std::string A = layer_prefix(i) + "linear_attn.";
  const int64_t C = c.conv_dim(), Vt = c.lin_value_total(), Hv = c.lin_v_heads;
  if (c.family == Family::Qwen3_5Moe) {
    lw.lin.qkv = quant(A + "in_proj_qkv", C, d);
    lw.lin.z = quant(A + "in_proj_z", Vt, d);
    lw.lin.b = quant(A + "in_proj_b", Hv, d);
    lw.lin.a = quant(A + "in_proj_a", Hv, d);
  } else {
    // Qwen3-Next: per key head g, in_proj_qkvz rows are [q_g (dk) | k_g (dk) | v_g (r*dv) | z_g (r*dv)]
    // and in_proj_ba rows [b_g (r) | a_g (r)]; regroup into contiguous q|k|v, z, b, a.
    const int64_t nk = c.lin_k_heads, dk = c.lin_k_dim, r = Hv / nk, rv = r * c.lin_v_dim;
    const QuantMatrix qkvz = quant(A + "in_proj_qkvz", C + Vt, d);
    const QuantMatrix ba = quant(A + "in_proj_ba", 2 * Hv, d);
    auto fresh = [&](const QuantMatrix& like) {
      auto s = std::make_unique<QuantStorage>();
      s->cols = like.cols, s->bits = like.bits, s->group_size = like.group_size;
      owned_.push_back(std::move(s));
      return owned_.back().get();
    };
    QuantStorage *qkv = fresh(qkvz), *z = fresh(qkvz), *b = fresh(ba), *a = fresh(ba);
    const int64_t group_rows = 2 * dk + 2 * rv;
    for (int64_t g = 0; g < nk; ++g) append_rows(*qkv, qkvz, g * group_rows, dk);            // q
    for (int64_t g = 0; g < nk; ++g) append_rows(*qkv, qkvz, g * group_rows + dk, dk);       // k
    for (int64_t g = 0; g < nk; ++g) append_rows(*qkv, qkvz, g * group_rows + 2 * dk, rv);   // v
    for (int64_t g = 0; g < nk; ++g) append_rows(*z, qkvz, g * group_rows + 2 * dk + rv, rv);
    for (int64_t g = 0; g < nk; ++g) append_rows(*b, ba, g * 2 * r, r);
    for (int64_t g = 0; g < nk; ++g) append_rows(*a, ba, g * 2 * r + r, r);
    lw.lin.qkv = qkv->view(), lw.lin.z = z->view(), lw.lin.b = b->view(), lw.lin.a = a->view();
  }
  lw.lin.out = quant(A + "out_proj", d, Vt);
  lw.lin.conv_w = load_vector(t, A + "conv1d.weight", C * c.conv_kernel);
  lw.lin.A_log = load_vector(t, A + "A_log", Hv);
  lw.lin.dt_bias = load_vector(t, A + "dt_bias", Hv);
  lw.lin.norm = load_vector(t, A + "norm.weight", c.lin_v_dim);
}

// The MoE block of layer i: router and shared expert, and the routed experts (MLX: stacked
// switch_mlp tensors; moeflux: the packed layer file, mapped).
void Model::resolve_moe(int64_t i) {
  const ModelConfig& c = cfg_;
  const TensorTable& t = table_;
  const int G = c.default_group;
  const int64_t d = c.hidden;
  auto quant = [&](const std::string& module, int64_t rows, int64_t cols) {
    return quant_matrix(t, module, rows, cols, bits_of(module), G);
  };
  LayerWeights& lw = layers_[size_t(i)];
  const std::string M = layer_prefix(i) + "mlp.";
  const int64_t E = c.experts, I = c.moe_inter, Is = c.shared_inter;
  if (c.router == RouterKind::NoauxTc) {
    resolve_mlp_noaux(i);
  } else {
    lw.mlp.router = quant(M + "gate", E, d);
    lw.mlp.shared_expert_gate = quant(M + "shared_expert_gate", 1, d);
    lw.mlp.shared = {quant(M + "shared_expert.gate_proj", Is, d), quant(M + "shared_expert.up_proj", Is, d),
                     quant(M + "shared_expert.down_proj", d, Is)};
  }
  LayerExperts& ex = experts_[size_t(i)];
  if (t.format == SourceFormat::Mlx) {
    const int bits = bits_of(M + "switch_mlp.gate_proj");
    expert_bits_ = bits;
    ex.gate = quant_matrix(t, M + "switch_mlp.gate_proj", I, d, bits, G, E);
    ex.up = quant_matrix(t, M + "switch_mlp.up_proj", I, d, bits, G, E);
    ex.down = quant_matrix(t, M + "switch_mlp.down_proj", d, I, bits, G, E);
  } else {
    char name[32];
    std::snprintf(name, sizeof name, "layer_%02d.bin", int(i));
    const fs::path p = fs::path(t.experts_dir) / name;
    MOE_CHECK(fs::exists(p), p.string() << ": expert file of layer " << i << " is missing");
    ex.blob_file = std::make_shared<MappedFile>(p.string());
    const int64_t blob = expert_blob_bytes(d, I, 4);
    MOE_CHECK(int64_t(ex.blob_file->size()) == E * blob,
              p.string() << ": " << ex.blob_file->size() << " bytes, expected " << E << " experts x " << blob
                         << " bytes = " << E * blob << " (short or wrong model?)");
  }
}

int Model::bits_of(const std::string& module) const {
  if (table_.format == SourceFormat::Moeflux) {
    auto it = table_.declared_bits.find(module + ".weight");
    return it == table_.declared_bits.end() ? 4 : it->second;
  }
  return cfg_.bits_for(module);
}

// layout.json beside the expert files (MFC repack, convert_cogito_v2) is informational, but one
// that disagrees with the config means the blobs belong to another model or layout.
void Model::check_packed_layout() const {
  const ModelConfig& c = cfg_;
  const fs::path p = fs::path(table_.experts_dir) / "layout.json";
  if (table_.format != SourceFormat::Moeflux || !fs::exists(p)) return;
  const std::string where = p.string();
  const nlohmann::json j = read_json_file(where);
  MOE_CHECK(j.is_object(), where << ": expected a JSON object, found " << json_shown(j));
  const std::array<int64_t, 10> off = expert_blob_offsets(c.hidden, c.moe_inter, 4);
  auto expect = [&](const char* key, int64_t want, const char* what) {
    if (!j.contains(key)) return;
    const int64_t v = json_int(j[key], where + ": " + key);
    MOE_CHECK(v == want, where << ": " << key << " is " << v << ", expected " << want << " (" << what << ")");
  };
  expect("expert_size", off[9], "the 4-bit blob of hidden_size x moe_intermediate_size");
  expect("num_experts", c.experts, "the config's routed experts");
  expect("num_layers", c.layers, "the config's num_hidden_layers");
  if (j.contains("moe_layers")) {
    std::vector<int64_t> want;
    for (int64_t i = 0; i < c.layers; ++i)
      if (c.layer_moe[size_t(i)]) want.push_back(i);
    const nlohmann::json w = want;
    MOE_CHECK(j["moe_layers"] == w, where << ": moe_layers is " << json_shown(j["moe_layers"]) << ", expected "
                                          << json_shown(w) << " (the config's MoE layers)");
  }
  if (!j.contains("components")) return;
  const nlohmann::json& comps = j["components"];
  MOE_CHECK(comps.is_array() && comps.size() == 9, where << ": components: expected an array of the 9 blob components, found "
                                                         << json_shown(comps));
  for (size_t k = 0; k < 9; ++k) {
    const nlohmann::json& e = comps[k];
    const std::string at = where + ": components[" + std::to_string(k) + "]";
    MOE_CHECK(e.is_object() && e.contains("name") && e.contains("offset") && e.contains("size"),
              at << ": expected an object with name, offset and size, found " << json_shown(e));
    const std::string name = json_string(e["name"], at + ".name");
    const int64_t o = json_int(e["offset"], at + ".offset"), n = json_int(e["size"], at + ".size");
    MOE_CHECK(name == kExpertBlobComponents[k] && o == off[k] && n == off[k + 1] - off[k],
              at << " is " << name << " at " << o << " (" << n << " bytes), expected " << kExpertBlobComponents[k] << " at " << off[k]
                 << " (" << off[k + 1] - off[k] << " bytes; docs/ops/formats.md \"Packed experts\")");
  }
}

void Model::resolve_mla(int64_t i) {
  const ModelConfig& c = cfg_;
  const MlaConfig& m = c.mla;
  const std::string A = layer_prefix(i) + "self_attn.";
  auto quant = [&](const std::string& module, int64_t rows, int64_t cols) {
    return quant_matrix(table_, A + module, rows, cols, bits_of(A + module), c.default_group);
  };
  const int64_t d = c.hidden, H = c.attn_heads, Dn = m.qk_nope_dim, Dr = m.qk_rope_dim, Dv = m.v_head_dim,
                L = m.kv_lora_rank, Q = m.q_lora_rank;
  MlaAttnWeights& w = layers_[size_t(i)].mla;
  w.q_a = quant("q_a_proj", Q, d);
  w.q_b = quant("q_b_proj", H * (Dn + Dr), Q);
  w.kv_a = quant("kv_a_proj_with_mqa", L + Dr, d);
  // One [H (Dn + Dv), L] matrix as HF and Cogito's file store it. Current mlx-lm splits it at
  // load into embed_q / unembed_out, requantized along another axis; a file saved that way holds a
  // different model than its kv_b_proj was, and is refused rather than guessed at.
  MOE_CHECK(!table_.find(A + "embed_q.weight") && !table_.find(A + "unembed_out.weight"),
            table_.dir << ": layer " << i << " has mlx-lm's split self_attn.embed_q / unembed_out (kv_b_proj requantized "
                       << "per head); not supported: convert from a checkpoint with self_attn.kv_b_proj");
  w.kv_b = quant("kv_b_proj", H * (Dn + Dv), L);
  w.o = quant("o_proj", d, H * Dv);
  // DeepSeek RMSNorm is w x^ (no +1): the stored weights as they are.
  w.q_a_norm = load_vector(table_, A + "q_a_layernorm.weight", Q);
  w.kv_a_norm = load_vector(table_, A + "kv_a_layernorm.weight", L);
}

void Model::resolve_mlp_noaux(int64_t i) {
  const ModelConfig& c = cfg_;
  const std::string M = layer_prefix(i) + "mlp.";
  const int64_t d = c.hidden, E = c.experts, Is = c.shared_inter;
  MlpWeights& w = layers_[size_t(i)].mlp;
  // mlx-lm's MoEGate holds a bare BF16 array (not a Linear, so never quantized); HF computes the
  // logits in f32 from it. Read in place (a view into the mapped shard).
  const TensorInfo& g = table_.get(M + "gate.weight");
  expect_tensor(g, DType::BF16, {E, d});
  MOE_CHECK(reinterpret_cast<uintptr_t>(g.data) % 2 == 0,
            g.file << ": tensor '" << g.name << "' data is not 2-byte aligned (BF16 is read in place)");
  w.router_bf16 = std::span<const bf16>(reinterpret_cast<const bf16*>(g.data), size_t(E * d));
  // F32 in current mlx-lm files (cast_predicate keeps it); BF16 where a conversion cast it (MFR
  // reads Cogito's as BF16). Either is widened exactly: the model is what the file holds.
  const TensorInfo& bias = table_.get(M + "gate.e_score_correction_bias");
  expect_tensor(bias, bias.dtype == DType::BF16 ? DType::BF16 : DType::F32, {E});
  w.score_bias = load_vector(table_, M + "gate.e_score_correction_bias", E);
  for (float b : w.score_bias)
    MOE_CHECK(std::isfinite(b), table_.get(M + "gate.e_score_correction_bias").file
                                    << ": tensor '" << M << "gate.e_score_correction_bias' has a non-finite value " << b);
  auto quant = [&](const std::string& module, int64_t rows, int64_t cols) {
    return quant_matrix(table_, M + module, rows, cols, bits_of(M + module), c.default_group);
  };
  w.shared = {quant("shared_experts.gate_proj", Is, d), quant("shared_experts.up_proj", Is, d),
              quant("shared_experts.down_proj", d, Is)};
}

ExpertWeights Model::expert(int64_t layer, int64_t e) const {
  const ModelConfig& c = cfg_;
  MOE_CHECK(!is_gguf(), "expert: " << table_.dir << " is a GGUF model: its experts are ggml block matrices (expert_ggml)");
  MOE_CHECK(layer >= 0 && layer < c.layers && layers_[size_t(layer)].moe,
            "expert: layer " << layer << " is not an MoE layer of this " << c.layers << "-layer model");
  MOE_CHECK(e >= 0 && e < c.experts, "expert: expert id " << e << " out of range [0, " << c.experts << ")");
  const LayerExperts& ex = experts_[size_t(layer)];
  if (ex.blob_file) {
    const int64_t blob = expert_blob_bytes(c.hidden, c.moe_inter, 4);
    return expert_from_blob(ex.blob_file->data() + e * blob, size_t(blob), c.hidden, c.moe_inter, 4);
  }
  return {ex.gate.row_block(e * c.moe_inter, c.moe_inter), ex.up.row_block(e * c.moe_inter, c.moe_inter),
          ex.down.row_block(e * c.hidden, c.hidden)};
}

}  // namespace moe
