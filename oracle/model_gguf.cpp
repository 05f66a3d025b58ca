// A model from a llama.cpp GGUF file (docs/gguf.md "Running a GGUF model"): the config from the
// metadata, every weight a view into the mapped file in its ggml block format. llama.cpp's
// converter (convert_hf_to_gguf.py, architectures qwen35moe and qwen3next) changes some tensors on
// the way; the loader undoes what it can exactly and says where it cannot:
//  - norms: stored with HF's zero-centred +1 already added (except linear attention's gated norm,
//    which has none): used as stored, as the MLX files' folded norms are;
//  - A_log: stored as ssm_a = -exp(A_log) in f32; the forward's decay_beta takes A_log, here
//    log(-ssm_a) rounded to f32 (equal to the original A_log wherever the f32 exp and log round trip,
//    within one f32 rounding elsewhere);
//  - conv1d: [C, K] as ggml's ne [K, C], the layout the forward reads;
//  - Qwen3-Next's in_proj_qkvz / in_proj_ba: split into attn_qkv (q|k|v) and attn_gate (z), ssm_ba
//    kept per key head [b (r) | a (r)]: b and a regrouped here by whole rows;
//  - Qwen3.5 with fewer key than value heads: every value-head-indexed tensor stored in tiled order
//    (position i Hk + g holds HF head g r + i); rows and vectors are put back in HF order here, and
//    out_proj, whose columns are value heads, multiplies the forward's x in the file's order
//    (Weight::x_perm);
//  - experts merged per layer into [E * rows, cols] tensors (ffn_*_exps, or ffn_gate_up_exps).
// deepseek2 (DeepSeek-V3 / Cogito-V2): kv_b_proj split per head into attn_k_b (W_kb,h transposed)
// and attn_v_b, which mla_attention takes as they are (ops/mla_attention.h); the YaRN mscale from
// rope.scaling.yarn_log_multiplier (0.1 mscale_all_dim; llama.cpp assumes mscale = mscale_all_dim);
// RoPE on adjacent pairs (llama.cpp's rope type for deepseek2), i.e. HF's rope_interleave.
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/ggml_blocks.h"
#include "oracle/gguf.h"
#include "oracle/gguf_convert.h"
#include "oracle/model.h"

namespace moe {
namespace {

std::string blk(int64_t i, const char* what) { return "blk." + std::to_string(i) + "." + what; }

// An integer key, or `fallback` when absent (fallback < 0: required).
int64_t meta_int(const GgufFile& f, const std::string& key, int64_t fallback = -1) {
  if (fallback >= 0 && !f.find_value(key)) return fallback;
  const uint64_t v = f.get_uint(key);
  MOE_CHECK(v <= uint64_t(1) << 40, "gguf: " << f.path() << ": metadata '" << key << "' = " << v << " is out of range");
  return int64_t(v);
}

const GgufTensor& tensor(const GgufFile& f, const std::string& name) {
  const GgufTensor* t = f.find_tensor(name);
  MOE_CHECK(t, "gguf: " << f.path() << ": tensor '" << name << "' is missing");
  return *t;
}

// Tensor `name` as a [rows, cols] block matrix (ne = [cols, rows], or [cols] / [cols, 1] for one row;
// `lead` > 0: a [cols, rows, lead] stack viewed as lead * rows rows).
BlockMatrix block_matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols, int64_t lead = 0) {
  const GgufTensor& t = tensor(f, name);
  std::vector<int64_t> want{cols, rows};
  if (lead > 0) want.push_back(lead);
  const bool one_row = lead == 0 && rows == 1 && t.ne == std::vector<int64_t>{cols};
  MOE_CHECK(t.ne == want || one_row, "gguf: " << f.path() << ": tensor '" << name << "' has ne " << t.shape_string()
                                              << ", expected [" << cols << ", " << rows
                                              << (lead > 0 ? ", " + std::to_string(lead) : std::string()) << "]");
  MOE_CHECK(ggml_block_format(t.type->id), "gguf: " << f.path() << ": tensor '" << name << "' is " << t.type->name
                                                    << ", a ggml type moeoracle does not compute with (f32, f16, bf16, "
                                                    << "q4_0, q4_1, q5_0, q5_1, q8_0, q2_K-q6_K, iq4_nl, iq4_xs)");
  return BlockMatrix{t.type->id, t.data, (lead > 0 ? lead : 1) * rows, cols};
}

// A vector of n values (f32, f16 or bf16: exact in f32), any shape of n elements.
std::vector<float> vector_of(const GgufFile& f, const std::string& name, int64_t n) {
  const GgufTensor& t = tensor(f, name);
  const uint32_t id = t.type->id;
  MOE_CHECK(id == 0 || id == 1 || id == 30, "gguf: " << f.path() << ": tensor '" << name << "' is " << t.type->name
                                                     << ", expected f32, f16 or bf16");
  MOE_CHECK(t.numel() == n, "gguf: " << f.path() << ": tensor '" << name << "' has ne " << t.shape_string() << " ("
                                     << t.numel() << " values), expected " << n << " values");
  std::vector<float> v(static_cast<size_t>(n));
  ggml_dequant_f32(id, {t.data, t.bytes}, n, v.data());
  return v;
}

// A bool key, or `fallback` when absent.
bool meta_bool(const GgufFile& f, const std::string& key, bool fallback) {
  const GgufValue* v = f.find_value(key);
  if (!v) return fallback;
  MOE_CHECK(v->type == GgufType::BOOL, "gguf: " << f.path() << ": metadata '" << key << "' is " << v->summary() << ", expected a bool");
  return v->b;
}

double meta_float(const GgufFile& f, const std::string& key, double fallback) {
  return f.find_value(key) ? f.get_float(key) : fallback;
}

// HF value head h sits at position (h % r) Hk + h / r of a tiled Qwen3.5 tensor.
int64_t tiled_pos(int64_t h, int64_t r, int64_t Hk) { return (h % r) * Hk + h / r; }

}  // namespace

// The config from the metadata keys llama.cpp writes for deepseek2 (its DeepSeek-V2 / V3 converter:
// MLA as MQA over the latent, head_count_kv 1, key_length L + Dr, key_length_mla Dn + Dr).
static ModelConfig gguf_config_deepseek2(const GgufFile& f) {
  const std::string a = "deepseek2.";
  ModelConfig c;
  c.family = Family::DeepseekV3;
  c.router = RouterKind::NoauxTc;
  MlaConfig& m = c.mla;
  c.hidden = meta_int(f, a + "embedding_length");
  c.layers = meta_int(f, a + "block_count") - meta_int(f, a + "nextn_predict_layers", 0);
  c.vocab = tensor(f, "token_embd.weight").ne.size() == 2 ? tensor(f, "token_embd.weight").ne[1] : 0;
  c.attn_heads = c.kv_heads = meta_int(f, a + "attention.head_count");
  m.q_lora_rank = meta_int(f, a + "attention.q_lora_rank", 0);
  MOE_CHECK(m.q_lora_rank > 0, "gguf: " << f.path() << ": attention.q_lora_rank is absent or 0 (DeepSeek-V2-Lite's "
                                        << "unfactored attn_q is not implemented)");
  m.kv_lora_rank = meta_int(f, a + "attention.kv_lora_rank");
  m.qk_rope_dim = meta_int(f, a + "rope.dimension_count");
  // Files with the split k_b / v_b say the per-head sizes in the _mla keys; older ones in key_length.
  const bool mla_keys = f.find_value(a + "attention.key_length_mla") != nullptr;
  const int64_t qk = meta_int(f, a + (mla_keys ? "attention.key_length_mla" : "attention.key_length"));
  m.v_head_dim = meta_int(f, a + (mla_keys ? "attention.value_length_mla" : "attention.value_length"));
  MOE_CHECK(qk > m.qk_rope_dim, "gguf: " << f.path() << ": key length " << qk << " is not more than rope.dimension_count "
                                         << m.qk_rope_dim);
  m.qk_nope_dim = qk - m.qk_rope_dim;
  c.head_dim = m.qk_rope_dim;
  c.partial_rotary = 1.0;
  m.rope_interleave = true;  // llama.cpp rotates adjacent pairs for deepseek2
  c.experts = meta_int(f, a + "expert_count");
  c.experts_per_tok = meta_int(f, a + "expert_used_count");
  c.moe_inter = meta_int(f, a + "expert_feed_forward_length");
  m.n_shared_experts = meta_int(f, a + "expert_shared_count");
  // Both bounded before their product is formed.
  MOE_CHECK(m.n_shared_experts > 0 && m.n_shared_experts <= (int64_t(1) << 20) && c.moe_inter <= (int64_t(1) << 20),
            "gguf: " << f.path() << ": expert_shared_count " << m.n_shared_experts << " and expert_feed_forward_length "
                     << c.moe_inter << ", expected in [1, 2^20] and [0, 2^20]");
  c.shared_inter = c.moe_inter * m.n_shared_experts;
  c.dense_inter = meta_int(f, a + "feed_forward_length", 0);
  m.first_k_dense_replace = meta_int(f, a + "leading_dense_block_count", 0);
  m.n_group = meta_int(f, a + "expert_group_count", 1);
  m.topk_group = meta_int(f, a + "expert_group_used_count", 1);
  m.routed_scaling_factor = meta_float(f, a + "expert_weights_scale", 1.0);
  c.norm_topk_prob = meta_bool(f, a + "expert_weights_norm", false);
  const int64_t gating = meta_int(f, a + "expert_gating_func", 0);
  MOE_CHECK(gating == 2, "gguf: " << f.path() << ": expert_gating_func = " << gating
                                  << ", expected 2 (sigmoid: DeepSeek-V3's noaux_tc router; V2's softmax is not implemented)");
  c.rope_theta = meta_float(f, a + "rope.freq_base", 10000.0);
  const GgufValue* type = f.find_value(a + "rope.scaling.type");
  MOE_CHECK(type && type->type == GgufType::STRING && type->s == "yarn",
            "gguf: " << f.path() << ": rope.scaling.type is " << (type ? type->summary() : std::string("absent"))
                     << ", expected \"yarn\" (the only RoPE implemented for MLA)");
  m.yarn_factor = f.get_float(a + "rope.scaling.factor");
  m.original_max_position = meta_int(f, a + "rope.scaling.original_context_length");
  m.beta_fast = meta_float(f, a + "rope.scaling.yarn_beta_fast", 32.0);
  m.beta_slow = meta_float(f, a + "rope.scaling.yarn_beta_slow", 1.0);
  m.mscale_all_dim = mscale_all_dim_from_log_multiplier(float(meta_float(f, a + "rope.scaling.yarn_log_multiplier", 0.0)));
  m.mscale = m.mscale_all_dim;
  const double eps = f.get_float(a + "attention.layer_norm_rms_epsilon");
  MOE_CHECK(std::isfinite(eps) && eps >= 0 && eps <= 1,
            "gguf: " << f.path() << ": layer_norm_rms_epsilon " << eps << ", expected in [0, 1]");
  c.eps = float(eps);
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  MOE_CHECK(c.layers > 0 && c.layers <= 4096, "gguf: " << f.path() << ": " << c.layers << " layers, expected 1 to 4096");
  for (int64_t i = 0; i < c.layers; ++i) {
    c.layer_kinds.push_back(LayerKind::Mla);
    c.layer_moe.push_back(i >= m.first_k_dense_replace);
  }
  c.validate(f.path());
  return c;
}

// The config from the metadata keys llama.cpp writes for qwen35moe / qwen3next / deepseek2.
static ModelConfig gguf_config(const GgufFile& f) {
  const std::string arch = f.get_string("general.architecture");
  ModelConfig c;
  if (arch == "qwen35moe") {
    c.family = Family::Qwen3_5Moe;
  } else if (arch == "qwen3next") {
    c.family = Family::Qwen3Next;
  } else if (arch == "deepseek2") {
    return gguf_config_deepseek2(f);
  } else {
    MOE_FAIL("gguf: " << f.path() << ": architecture '" << arch << "' is not supported for running (expected qwen35moe, "
                      << "qwen3next or deepseek2)");
  }
  const std::string a = arch + ".";
  c.hidden = meta_int(f, a + "embedding_length");
  c.layers = meta_int(f, a + "block_count") - meta_int(f, a + "nextn_predict_layers", 0);
  c.vocab = tensor(f, "token_embd.weight").ne.size() == 2 ? tensor(f, "token_embd.weight").ne[1] : 0;
  c.attn_heads = meta_int(f, a + "attention.head_count");
  c.kv_heads = meta_int(f, a + "attention.head_count_kv");
  c.head_dim = meta_int(f, a + "attention.key_length");
  MOE_CHECK(meta_int(f, a + "attention.value_length", c.head_dim) == c.head_dim,
            "gguf: " << f.path() << ": attention.value_length differs from key_length (the families have one head_dim)");
  c.lin_k_heads = meta_int(f, a + "ssm.group_count");
  c.lin_v_heads = meta_int(f, a + "ssm.time_step_rank");
  c.lin_k_dim = meta_int(f, a + "ssm.state_size");
  const int64_t inner = meta_int(f, a + "ssm.inner_size");
  MOE_CHECK(c.lin_v_heads > 0 && inner % c.lin_v_heads == 0,
            "gguf: " << f.path() << ": ssm.inner_size " << inner << " is not a multiple of ssm.time_step_rank " << c.lin_v_heads);
  c.lin_v_dim = inner / c.lin_v_heads;
  c.conv_kernel = meta_int(f, a + "ssm.conv_kernel");
  c.experts = meta_int(f, a + "expert_count");
  c.experts_per_tok = meta_int(f, a + "expert_used_count");
  c.moe_inter = meta_int(f, a + "expert_feed_forward_length");
  c.shared_inter = meta_int(f, a + "expert_shared_feed_forward_length");
  c.dense_inter = meta_int(f, a + "feed_forward_length", 0);
  c.norm_topk_prob = true;  // llama.cpp's graph always renormalises the top-k for these architectures
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c.rope_theta = f.find_value(a + "rope.freq_base") ? f.get_float(a + "rope.freq_base") : 10000.0;
  c.partial_rotary = double(meta_int(f, a + "rope.dimension_count", c.head_dim)) / double(c.head_dim);
  const double eps = f.get_float(a + "attention.layer_norm_rms_epsilon");
  MOE_CHECK(std::isfinite(eps) && eps >= 0 && eps <= 1,
            "gguf: " << f.path() << ": layer_norm_rms_epsilon " << eps << ", expected in [0, 1]");
  c.eps = float(eps);
  MOE_CHECK(c.layers > 0 && c.layers <= 4096, "gguf: " << f.path() << ": " << c.layers << " layers, expected 1 to 4096");
  // Layer kinds: the per-layer recurrent_layers array where given, else every interval-th layer full.
  const GgufValue* rec = f.find_value(a + "attention.recurrent_layers");
  const int64_t interval = meta_int(f, a + "full_attention_interval", 4);
  MOE_CHECK(rec || interval > 0, "gguf: " << f.path() << ": full_attention_interval is 0");
  if (rec)
    MOE_CHECK(rec->type == GgufType::ARRAY && int64_t(rec->items.size()) >= c.layers,
              "gguf: " << f.path() << ": attention.recurrent_layers: expected an array of " << c.layers
                       << " flags, found " << rec->summary());
  for (int64_t i = 0; i < c.layers; ++i) {
    const bool linear = rec ? (rec->items[size_t(i)].b || rec->items[size_t(i)].u != 0) : (i + 1) % interval != 0;
    c.layer_kinds.push_back(linear ? LayerKind::Linear : LayerKind::Full);
    c.layer_moe.push_back(f.find_tensor(blk(i, "ffn_gate_exps.weight")) || f.find_tensor(blk(i, "ffn_gate_up_exps.weight")));
  }
  c.validate(f.path());
  return c;
}

void Model::resolve_gguf() {
  const GgufFile& f = *gguf_;
  const ModelConfig& c = cfg_;
  const int64_t d = c.hidden;
  embed_ = Weight(block_matrix(f, "token_embd.weight", c.vocab, d));
  lm_head_ = c.tie_word_embeddings ? embed_ : Weight(block_matrix(f, "output.weight", c.vocab, d));
  final_norm_ = vector_of(f, "output_norm.weight", d);
  layers_.resize(size_t(c.layers));
  experts_ggml_.resize(size_t(c.layers));
  for (int64_t i = 0; i < c.layers; ++i) resolve_gguf_layer(i);
}

void Model::resolve_gguf_layer(int64_t i) {
  const GgufFile& f = *gguf_;
  const ModelConfig& c = cfg_;
  const int64_t d = c.hidden;
  LayerWeights& lw = layers_[size_t(i)];
  lw.kind = c.layer_kinds[size_t(i)];
  lw.moe = c.layer_moe[size_t(i)];
  lw.input_norm = vector_of(f, blk(i, "attn_norm.weight"), d);
  lw.post_norm = vector_of(f, blk(i, lw.kind == LayerKind::Mla ? "ffn_norm.weight" : "post_attention_norm.weight"), d);
  auto mat = [&](const char* what, int64_t rows, int64_t cols) { return Weight(block_matrix(f, blk(i, what), rows, cols)); };
  if (lw.kind == LayerKind::Mla) {
    resolve_gguf_mla(i);
  } else if (lw.kind == LayerKind::Full) {
    const int64_t H = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim;
    lw.full.q = mat("attn_q.weight", 2 * H * D, d);
    lw.full.k = mat("attn_k.weight", Hkv * D, d);
    lw.full.v = mat("attn_v.weight", Hkv * D, d);
    lw.full.o = mat("attn_output.weight", d, H * D);
    lw.full.q_norm = vector_of(f, blk(i, "attn_q_norm.weight"), D);
    lw.full.k_norm = vector_of(f, blk(i, "attn_k_norm.weight"), D);
  } else {
    resolve_gguf_linear(i);
  }
  if (!lw.moe) {
    MOE_CHECK(c.dense_inter > 0, "gguf: " << f.path() << ": layer " << i << " has no ffn_*_exps (a dense MLP layer) but "
                                          << "feed_forward_length is missing");
    lw.mlp.shared_ggml = {block_matrix(f, blk(i, "ffn_gate.weight"), c.dense_inter, d),
                          block_matrix(f, blk(i, "ffn_up.weight"), c.dense_inter, d),
                          block_matrix(f, blk(i, "ffn_down.weight"), d, c.dense_inter)};
    return;
  }
  const int64_t E = c.experts, I = c.moe_inter, Is = c.shared_inter;
  if (c.family == Family::DeepseekV3) {
    resolve_gguf_router_noaux(i);
  } else {
    lw.mlp.router = mat("ffn_gate_inp.weight", E, d);
    lw.mlp.shared_expert_gate = mat("ffn_gate_inp_shexp.weight", 1, d);
  }
  lw.mlp.shared_ggml = {block_matrix(f, blk(i, "ffn_gate_shexp.weight"), Is, d),
                        block_matrix(f, blk(i, "ffn_up_shexp.weight"), Is, d),
                        block_matrix(f, blk(i, "ffn_down_shexp.weight"), d, Is)};
  GgmlExperts& ex = experts_ggml_[size_t(i)];
  ex.fused = f.find_tensor(blk(i, "ffn_gate_up_exps.weight")) != nullptr;
  if (ex.fused) {
    ex.gate = block_matrix(f, blk(i, "ffn_gate_up_exps.weight"), 2 * I, d, E);
  } else {
    ex.gate = block_matrix(f, blk(i, "ffn_gate_exps.weight"), I, d, E);
    ex.up = block_matrix(f, blk(i, "ffn_up_exps.weight"), I, d, E);
  }
  ex.down = block_matrix(f, blk(i, "ffn_down_exps.weight"), d, I, E);
}

// Linear attention of layer i: qkv, z, b, a and out, conv, A_log (from ssm_a), dt_bias, norm, with
// Qwen3-Next's ssm_ba regrouped and Qwen3.5's tiled value heads put back in HF's order.
void Model::resolve_gguf_linear(int64_t i) {
  const GgufFile& f = *gguf_;
  const ModelConfig& c = cfg_;
  const int64_t d = c.hidden;
  auto mat = [&](const char* what, int64_t rows, int64_t cols) { return Weight(block_matrix(f, blk(i, what), rows, cols)); };
  // Rows of `src` in the order `rows` (whole rows: exact for every format), owned by the model.
  auto gather = [&](const BlockMatrix& src, const std::vector<int64_t>& rows) {
    const size_t rb = src.row_bytes();
    auto bytes = std::make_unique<std::vector<uint8_t>>(rows.size() * rb);
    for (size_t k = 0; k < rows.size(); ++k) std::memcpy(bytes->data() + k * rb, src.data + size_t(rows[k]) * rb, rb);
    owned_bytes_.push_back(std::move(bytes));
    return Weight(BlockMatrix{src.type, owned_bytes_.back()->data(), int64_t(rows.size()), src.cols});
  };
  const int64_t Kt = c.lin_key_total(), Vt = c.lin_value_total(), C = c.conv_dim(), Hv = c.lin_v_heads,
                Hk = c.lin_k_heads, Dv = c.lin_v_dim, K = c.conv_kernel, r = Hv / Hk;
  MOE_CHECK(!f.find_tensor(blk(i, "ssm_in.weight")),
            "gguf: " << f.path() << ": layer " << i << " holds the legacy fused ssm_in (in_proj_qkvz as HF groups it); "
                     << "not supported: convert the model again with a current llama.cpp (attn_qkv + attn_gate)");
  LinearAttnWeights& w = layers_[size_t(i)].lin;
  std::vector<float> A = vector_of(f, blk(i, "ssm_a"), Hv);
  std::vector<float> dt = vector_of(f, blk(i, "ssm_dt.bias"), Hv);
  std::vector<float> conv = vector_of(f, blk(i, "ssm_conv1d.weight"), C * K);
  const BlockMatrix qkv = block_matrix(f, blk(i, "attn_qkv.weight"), C, d);
  const BlockMatrix z = block_matrix(f, blk(i, "attn_gate.weight"), Vt, d);
  const Weight out = mat("ssm_out.weight", d, Vt);
  if (c.family == Family::Qwen3Next) {
    // ssm_ba: per key head g, r rows of b then r rows of a.
    const BlockMatrix ba = block_matrix(f, blk(i, "ssm_ba.weight"), 2 * Hv, d);
    std::vector<int64_t> brows, arows;
    for (int64_t g = 0; g < Hk; ++g)
      for (int64_t j = 0; j < r; ++j) brows.push_back(g * 2 * r + j), arows.push_back(g * 2 * r + r + j);
    w.qkv = Weight(qkv), w.z = Weight(z), w.b = gather(ba, brows), w.a = gather(ba, arows), w.out = out;
  } else if (r == 1) {
    w.qkv = Weight(qkv), w.z = Weight(z), w.out = out;
    w.b = mat("ssm_beta.weight", Hv, d), w.a = mat("ssm_alpha.weight", Hv, d);
  } else {
    // Tiled value heads back to HF's order: rows, vectors and conv channels by head; out_proj's
    // columns through x_perm.
    std::vector<int64_t> qkv_rows, z_rows, head_rows;
    for (int64_t k = 0; k < 2 * Kt; ++k) qkv_rows.push_back(k);
    std::vector<float> A2(A.size()), dt2(dt.size()), conv2(conv);
    Weight o = out;
    o.x_perm.resize(size_t(Vt));
    for (int64_t h = 0; h < Hv; ++h) {
      const int64_t p = tiled_pos(h, r, Hk);
      for (int64_t j = 0; j < Dv; ++j) {
        qkv_rows.push_back(2 * Kt + p * Dv + j), z_rows.push_back(p * Dv + j);
        o.x_perm[size_t(p * Dv + j)] = int32_t(h * Dv + j);
        std::memcpy(&conv2[size_t((2 * Kt + h * Dv + j) * K)], &conv[size_t((2 * Kt + p * Dv + j) * K)], size_t(K) * 4);
      }
      head_rows.push_back(p);
      A2[size_t(h)] = A[size_t(p)], dt2[size_t(h)] = dt[size_t(p)];
    }
    A.swap(A2), dt.swap(dt2), conv.swap(conv2);
    w.qkv = gather(qkv, qkv_rows), w.z = gather(z, z_rows), w.out = std::move(o);
    w.b = gather(block_matrix(f, blk(i, "ssm_beta.weight"), Hv, d), head_rows);
    w.a = gather(block_matrix(f, blk(i, "ssm_alpha.weight"), Hv, d), head_rows);
  }
  w.A_log.resize(size_t(Hv));
  for (int64_t h = 0; h < Hv; ++h) {
    MOE_CHECK(A[size_t(h)] < 0 && std::isfinite(A[size_t(h)]),
              "gguf: " << f.path() << ": tensor '" << blk(i, "ssm_a") << "' value " << h << " is " << A[size_t(h)]
                       << ", expected a finite negative -exp(A_log)");
    w.A_log[size_t(h)] = float(std::log(-double(A[size_t(h)])));
  }
  w.dt_bias = std::move(dt);
  w.conv_w = std::move(conv);
  w.norm = vector_of(f, blk(i, "ssm_norm.weight"), Dv);
}

// MLA of layer i: the projections, the norms and llama.cpp's k_b ([H L, Dn]: per head W_kb,h
// transposed) and v_b ([H Dv, L]), as mla_attention takes them.
void Model::resolve_gguf_mla(int64_t i) {
  const GgufFile& f = *gguf_;
  const ModelConfig& c = cfg_;
  const MlaConfig& m = c.mla;
  const int64_t d = c.hidden, H = c.attn_heads, Dn = m.qk_nope_dim, Dr = m.qk_rope_dim, Dv = m.v_head_dim,
                L = m.kv_lora_rank, Q = m.q_lora_rank;
  MOE_CHECK(f.find_tensor(blk(i, "attn_k_b.weight")) || !f.find_tensor(blk(i, "attn_kv_b.weight")),
            "gguf: " << f.path() << ": layer " << i << " holds only the unsplit attn_kv_b; not supported: convert the "
                     << "model again with a current llama.cpp (attn_k_b + attn_v_b)");
  MlaAttnWeights& w = layers_[size_t(i)].mla;
  w.q_a = Weight(block_matrix(f, blk(i, "attn_q_a.weight"), Q, d));
  w.q_b = Weight(block_matrix(f, blk(i, "attn_q_b.weight"), H * (Dn + Dr), Q));
  w.kv_a = Weight(block_matrix(f, blk(i, "attn_kv_a_mqa.weight"), L + Dr, d));
  w.kv_b = MlaKvB(block_matrix(f, blk(i, "attn_k_b.weight"), L, Dn, H), block_matrix(f, blk(i, "attn_v_b.weight"), Dv, L, H));
  w.o = Weight(block_matrix(f, blk(i, "attn_output.weight"), d, H * Dv));
  w.q_a_norm = vector_of(f, blk(i, "attn_q_a_norm.weight"), Q);
  w.kv_a_norm = vector_of(f, blk(i, "attn_kv_a_norm.weight"), L);
}

// The noaux_tc router of layer i: ffn_gate_inp (bf16 read in place as the MLX path does; another
// type through matvec_ggml) and the selection bias exp_probs_b.
void Model::resolve_gguf_router_noaux(int64_t i) {
  const GgufFile& f = *gguf_;
  const int64_t E = cfg_.experts, d = cfg_.hidden;
  MlpWeights& w = layers_[size_t(i)].mlp;
  const BlockMatrix g = block_matrix(f, blk(i, "ffn_gate_inp.weight"), E, d);
  MOE_CHECK(g.type != 30 || reinterpret_cast<uintptr_t>(g.data) % 2 == 0,
            "gguf: " << f.path() << ": tensor '" << blk(i, "ffn_gate_inp.weight") << "' is not 2-byte aligned");
  if (g.type == 30) w.router_bf16 = std::span<const bf16>(reinterpret_cast<const bf16*>(g.data), size_t(E * d));
  else w.router = Weight(g);
  w.score_bias = vector_of(f, blk(i, "exp_probs_b.bias"), E);
  for (float b : w.score_bias)
    MOE_CHECK(std::isfinite(b), "gguf: " << f.path() << ": tensor '" << blk(i, "exp_probs_b.bias") << "' has a non-finite value " << b);
}

GgmlExpert Model::expert_ggml(int64_t layer, int64_t e) const {
  const ModelConfig& c = cfg_;
  MOE_CHECK(is_gguf(), "expert_ggml: " << table_.dir << " is not a GGUF model");
  MOE_CHECK(layer >= 0 && layer < c.layers && layers_[size_t(layer)].moe,
            "expert: layer " << layer << " is not an MoE layer of this " << c.layers << "-layer model");
  MOE_CHECK(e >= 0 && e < c.experts, "expert: expert id " << e << " out of range [0, " << c.experts << ")");
  const GgmlExperts& ex = experts_ggml_[size_t(layer)];
  const int64_t I = c.moe_inter;
  if (ex.fused) return {ex.gate.row_block(2 * e * I, I), ex.gate.row_block(2 * e * I + I, I), ex.down.row_block(e * c.hidden, c.hidden)};
  return {ex.gate.row_block(e * I, I), ex.up.row_block(e * I, I), ex.down.row_block(e * c.hidden, c.hidden)};
}

void Model::load_gguf(const std::string& path) {
  gguf_ = std::make_shared<GgufFile>(path);
  table_.dir = path;
  table_.config_source = path;
  cfg_ = gguf_config(*gguf_);
  resolve_gguf();
}

}  // namespace moe
