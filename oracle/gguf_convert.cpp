#include "oracle/gguf_convert.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "core/check.h"
#include "core/half.h"
#include "oracle/gguf.h"

namespace moe {
namespace {

constexpr uint32_t kF32 = 0, kQ4_1 = 3, kBF16 = 30;

// Whether the bf16 value v is an f16 value too.
bool fits_f16(bf16 v) {
  const double x = bf16_to_f32(v);
  return f16_to_double(f16_from_double(x)) == x || std::isnan(x);
}

// The writer's tensors: their bytes live here until the file is written.
struct Tensors {
  std::deque<std::vector<uint8_t>> store;
  std::vector<GgufTensorOut> out;
  void add(const std::string& name, uint32_t type, std::vector<int64_t> ne, std::vector<uint8_t> bytes) {
    store.push_back(std::move(bytes));
    out.push_back({name, type, std::move(ne), store.back()});
  }
  void add_f32(const std::string& name, std::vector<int64_t> ne, std::span<const float> v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    add(name, kF32, std::move(ne), std::move(b));
  }
};

// m's weights as ggml bytes: q4_1 where exact (4 bits, groups of 32s, scales and biases in f16),
// else f32 (every q s + b checked to be an f32 value); `force_f32` for the tensors llama.cpp keeps in f32.
bool q4_1_holds(const QuantMatrix& m) {
  bool ok = m.bits == 4 && m.group_size % 32 == 0;
  for (int64_t i = 0; ok && i < m.scale_count(); ++i) ok = fits_f16(m.scales[i]) && fits_f16(m.biases[i]);
  return ok;
}

std::pair<uint32_t, std::vector<uint8_t>> to_ggml(const QuantMatrix& m, const std::string& name, bool force_f32) {
  const int64_t G = m.group_size, groups = m.groups_per_row(), wpr = m.words_per_row();
  std::vector<uint8_t> out;
  if (!force_f32 && q4_1_holds(m)) {
    out.resize(size_t(m.rows * m.cols / 32 * 20));
    uint8_t* p = out.data();
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t b = 0; b < m.cols / 32; ++b, p += 20) {
        const int64_t g = r * groups + b * 32 / G;
        const uint16_t d = f16_from_double(bf16_to_f32(m.scales[g])), mn = f16_from_double(bf16_to_f32(m.biases[g]));
        std::memcpy(p, &d, 2), std::memcpy(p + 2, &mn, 2);
        for (int j = 0; j < 16; ++j)
          p[4 + j] = uint8_t(quant_code(m.w + r * wpr, b * 32 + j, 4) | quant_code(m.w + r * wpr, b * 32 + j + 16, 4) << 4);
      }
    return {kQ4_1, std::move(out)};
  }
  std::vector<float> v(size_t(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) {
      const int64_t g = r * groups + c / G;
      const double w = double(quant_code(m.w + r * wpr, c, m.bits)) * bf16_to_f32(m.scales[g]) + bf16_to_f32(m.biases[g]);
      v[size_t(r * m.cols + c)] = float(w);
      MOE_CHECK(double(float(w)) == w || std::isnan(w),
                "gguf write: tensor '" << name << "' weight [" << r << ", " << c << "] = " << w
                                       << " has no exact f32 value, and its MLX format no exact ggml one");
    }
  out.resize(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return {kF32, std::move(out)};
}

// Rows `rows` of m (in that order) as an owned MLX matrix.
QuantStorage take_rows(const QuantMatrix& m, const std::vector<int64_t>& rows) {
  QuantStorage s;
  s.cols = m.cols, s.bits = m.bits, s.group_size = m.group_size;
  const int64_t wpr = m.words_per_row(), gpr = m.groups_per_row();
  for (int64_t r : rows) {
    s.w.insert(s.w.end(), m.w + r * wpr, m.w + (r + 1) * wpr);
    s.scales.insert(s.scales.end(), m.scales + r * gpr, m.scales + (r + 1) * gpr);
    s.biases.insert(s.biases.end(), m.biases + r * gpr, m.biases + (r + 1) * gpr);
    ++s.rows;
  }
  return s;
}

void append(QuantStorage& dst, const QuantStorage& src) {
  dst.w.insert(dst.w.end(), src.w.begin(), src.w.end());
  dst.scales.insert(dst.scales.end(), src.scales.begin(), src.scales.end());
  dst.biases.insert(dst.biases.end(), src.biases.begin(), src.biases.end());
  dst.rows += src.rows;
}

// Columns of a converted [rows, cols] matrix moved in spans of `span` columns: span k of each row
// becomes span src[k]. Whole q4_1 blocks move, so span must be a multiple of 32 there.
void move_column_spans(uint32_t type, std::vector<uint8_t>& bytes, int64_t rows, int64_t cols, int64_t span,
                       const std::vector<int64_t>& src, const std::string& name) {
  const int64_t per = type == kQ4_1 ? 32 : 1, unit = type == kQ4_1 ? 20 : 4;
  MOE_CHECK(span % per == 0, "gguf write: '" << name << "': value heads of " << span
                                             << " columns are not whole q4_1 blocks of 32: cannot reorder them");
  const size_t row_bytes = size_t(cols / per * unit), span_bytes = size_t(span / per * unit);
  std::vector<uint8_t> row(row_bytes);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* p = bytes.data() + size_t(r) * row_bytes;
    for (size_t k = 0; k < src.size(); ++k) std::memcpy(row.data() + k * span_bytes, p + size_t(src[k]) * span_bytes, span_bytes);
    std::memcpy(p, row.data(), row_bytes);
  }
}

std::string blk(int64_t i, const char* what) { return "blk." + std::to_string(i) + "." + what; }

struct Writer {
  const Model& m;
  const ModelConfig& c;
  Tensors t;

  // `spans`: reorder the columns in spans of `span` (value heads) as move_column_spans.
  void mat(const std::string& name, const Weight& w, bool force_f32 = false, int64_t span = 0,
           const std::vector<int64_t>& spans = {}) {
    MOE_CHECK(!w.ggml && w.x_perm.empty(), "gguf write: '" << name << "' is not an MLX matrix");
    auto [type, bytes] = to_ggml(w.q, name, force_f32);
    if (!spans.empty()) move_column_spans(type, bytes, w.q.rows, w.q.cols, span, spans, name);
    t.add(name, type, {w.q.cols, w.q.rows}, std::move(bytes));
  }
  // Expert stacks: [cols, rows, E], each expert converted alike (a format per tensor: q4_1 only
  // when every expert's scales fit).
  void experts(int64_t i, const char* name, QuantMatrix ExpertWeights::*which) {
    bool q4_1 = true;  // one format per tensor: q4_1 only where it holds every expert
    for (int64_t e = 0; e < c.experts && q4_1; ++e) q4_1 = q4_1_holds(m.expert(i, e).*which);
    std::vector<uint8_t> all;
    uint32_t type = 0;
    int64_t rows = 0, cols = 0;
    for (int64_t e = 0; e < c.experts; ++e) {
      const QuantMatrix q = m.expert(i, e).*which;
      auto [ty, bytes] = to_ggml(q, blk(i, name), !q4_1);
      type = ty, rows = q.rows, cols = q.cols;
      all.insert(all.end(), bytes.begin(), bytes.end());
    }
    t.add(blk(i, name), type, {cols, rows, c.experts}, std::move(all));
  }
  void linear(int64_t i);
  void mla(int64_t i);
  void layer(int64_t i);
  std::vector<std::pair<std::string, GgufValue>> metadata() const;
  std::vector<std::pair<std::string, GgufValue>> metadata_deepseek2() const;
};

void Writer::linear(int64_t i) {
  const LinearAttnWeights& w = m.layer(i).lin;
  const int64_t Kt = c.lin_key_total(), Hv = c.lin_v_heads, Hk = c.lin_k_heads, Dv = c.lin_v_dim, K = c.conv_kernel,
                r = Hv / Hk, C = c.conv_dim();
  std::vector<float> A(static_cast<size_t>(Hv)), dt = w.dt_bias, conv = w.conv_w;
  for (int64_t h = 0; h < Hv; ++h) A[size_t(h)] = float(-std::exp(double(w.A_log[size_t(h)])));
  if (c.family == Family::Qwen3Next) {
    mat(blk(i, "attn_qkv.weight"), w.qkv), mat(blk(i, "attn_gate.weight"), w.z);
    // ssm_ba: per key head g, its r rows of b, then its r rows of a.
    QuantStorage ba = take_rows(w.b.q, {});
    for (int64_t g = 0; g < Hk; ++g) {
      std::vector<int64_t> rows;
      for (int64_t j = 0; j < r; ++j) rows.push_back(g * r + j);
      append(ba, take_rows(w.b.q, rows));
      append(ba, take_rows(w.a.q, rows));
    }
    mat(blk(i, "ssm_ba.weight"), ba.view());
    mat(blk(i, "ssm_out.weight"), w.out);
  } else if (r == 1) {
    mat(blk(i, "attn_qkv.weight"), w.qkv), mat(blk(i, "attn_gate.weight"), w.z);
    mat(blk(i, "ssm_beta.weight"), w.b), mat(blk(i, "ssm_alpha.weight"), w.a), mat(blk(i, "ssm_out.weight"), w.out);
  } else {
    // Tiled value heads: file position p holds HF head (p % Hk) r + p / Hk.
    std::vector<int64_t> qkv_rows, z_rows, head_rows;
    for (int64_t k = 0; k < 2 * Kt; ++k) qkv_rows.push_back(k);
    for (int64_t p = 0; p < Hv; ++p) {
      const int64_t h = (p % Hk) * r + p / Hk;
      head_rows.push_back(h);
      for (int64_t j = 0; j < Dv; ++j) {
        qkv_rows.push_back(2 * Kt + h * Dv + j), z_rows.push_back(h * Dv + j);
        std::memcpy(&conv[size_t((2 * Kt + p * Dv + j) * K)], &w.conv_w[size_t((2 * Kt + h * Dv + j) * K)], size_t(K) * 4);
      }
      A[size_t(p)] = float(-std::exp(double(w.A_log[size_t(h)]))), dt[size_t(p)] = w.dt_bias[size_t(h)];
    }
    mat(blk(i, "attn_qkv.weight"), take_rows(w.qkv.q, qkv_rows).view());
    mat(blk(i, "attn_gate.weight"), take_rows(w.z.q, z_rows).view());
    mat(blk(i, "ssm_beta.weight"), take_rows(w.b.q, head_rows).view());
    mat(blk(i, "ssm_alpha.weight"), take_rows(w.a.q, head_rows).view());
    mat(blk(i, "ssm_out.weight"), w.out, false, Dv, head_rows);
  }
  t.add_f32(blk(i, "ssm_conv1d.weight"), {K, C}, conv);
  t.add_f32(blk(i, "ssm_dt.bias"), {Hv}, dt);
  t.add_f32(blk(i, "ssm_a"), {Hv}, A);
  t.add_f32(blk(i, "ssm_norm.weight"), {Dv}, w.norm);
}

// MLA as llama.cpp's deepseek2 converter writes it: kv_b_proj split per head into attn_k_b
// (W_kb,h transposed, [H, L, Dn]: f32, its values checked exact) and attn_v_b ([H, Dv, L]).
void Writer::mla(int64_t i) {
  const MlaAttnWeights& w = m.layer(i).mla;
  const MlaConfig& mc = c.mla;
  const int64_t H = c.attn_heads, Dn = mc.qk_nope_dim, Dv = mc.v_head_dim, L = mc.kv_lora_rank;
  mat(blk(i, "attn_q_a.weight"), w.q_a), mat(blk(i, "attn_q_b.weight"), w.q_b);
  mat(blk(i, "attn_kv_a_mqa.weight"), w.kv_a), mat(blk(i, "attn_output.weight"), w.o);
  t.add_f32(blk(i, "attn_q_a_norm.weight"), {mc.q_lora_rank}, w.q_a_norm);
  t.add_f32(blk(i, "attn_kv_a_norm.weight"), {L}, w.kv_a_norm);
  MOE_CHECK(!w.kv_b.ggml, "gguf write: layer " << i << " kv_b is not an MLX matrix");
  MlaAttentionParams p;
  p.heads = H, p.nope_dim = Dn, p.v_dim = Dv, p.kv_lora = L, p.bits = w.kv_b.mlx.bits, p.group_size = w.kv_b.mlx.group_size;
  std::vector<float> k_b(size_t(H * L * Dn));
  std::vector<double> wk(size_t(Dn * L)), wv(size_t(Dv * L));
  std::vector<int64_t> v_rows;
  for (int64_t h = 0; h < H; ++h) {
    mla_kv_b_head<double>(p, w.kv_b, h, wk.data(), wv.data());
    for (int64_t d = 0; d < Dn; ++d)
      for (int64_t cl = 0; cl < L; ++cl) {
        const double v = wk[size_t(d * L + cl)];
        MOE_CHECK(double(float(v)) == v, "gguf write: layer " << i << " kv_b_proj weight of head " << h << " [" << d << ", " << cl
                                                              << "] = " << v << " has no exact f32 value (attn_k_b is f32)");
        k_b[size_t((h * L + cl) * Dn + d)] = float(v);
      }
    for (int64_t e = 0; e < Dv; ++e) v_rows.push_back(h * (Dn + Dv) + Dn + e);
  }
  t.add_f32(blk(i, "attn_k_b.weight"), {Dn, L, H}, k_b);
  auto [type, bytes] = to_ggml(take_rows(w.kv_b.mlx, v_rows).view(), blk(i, "attn_v_b.weight"), false);
  t.add(blk(i, "attn_v_b.weight"), type, {L, Dv, H}, std::move(bytes));
}

void Writer::layer(int64_t i) {
  const LayerWeights& lw = m.layer(i);
  const int64_t D = c.head_dim;
  const bool ds = c.family == Family::DeepseekV3;
  t.add_f32(blk(i, "attn_norm.weight"), {c.hidden}, lw.input_norm);
  t.add_f32(blk(i, ds ? "ffn_norm.weight" : "post_attention_norm.weight"), {c.hidden}, lw.post_norm);
  if (lw.kind == LayerKind::Mla) {
    mla(i);
  } else if (lw.kind == LayerKind::Full) {
    mat(blk(i, "attn_q.weight"), lw.full.q), mat(blk(i, "attn_k.weight"), lw.full.k);
    mat(blk(i, "attn_v.weight"), lw.full.v), mat(blk(i, "attn_output.weight"), lw.full.o);
    t.add_f32(blk(i, "attn_q_norm.weight"), {D}, lw.full.q_norm);
    t.add_f32(blk(i, "attn_k_norm.weight"), {D}, lw.full.k_norm);
  } else {
    linear(i);
  }
  if (!lw.moe) {
    mat(blk(i, "ffn_gate.weight"), lw.mlp.shared.gate), mat(blk(i, "ffn_up.weight"), lw.mlp.shared.up);
    mat(blk(i, "ffn_down.weight"), lw.mlp.shared.down);
    return;
  }
  if (ds) {  // the BF16 router as it is, and the selection bias
    std::vector<uint8_t> g(lw.mlp.router_bf16.size() * 2);
    std::memcpy(g.data(), lw.mlp.router_bf16.data(), g.size());
    t.add(blk(i, "ffn_gate_inp.weight"), kBF16, {c.hidden, c.experts}, std::move(g));
    t.add_f32(blk(i, "exp_probs_b.bias"), {c.experts}, lw.mlp.score_bias);
  } else {
    mat(blk(i, "ffn_gate_inp.weight"), lw.mlp.router, true);
    mat(blk(i, "ffn_gate_inp_shexp.weight"), lw.mlp.shared_expert_gate, true);
  }
  mat(blk(i, "ffn_gate_shexp.weight"), lw.mlp.shared.gate), mat(blk(i, "ffn_up_shexp.weight"), lw.mlp.shared.up);
  mat(blk(i, "ffn_down_shexp.weight"), lw.mlp.shared.down);
  experts(i, "ffn_gate_exps.weight", &ExpertWeights::gate);
  experts(i, "ffn_up_exps.weight", &ExpertWeights::up);
  experts(i, "ffn_down_exps.weight", &ExpertWeights::down);
}

std::vector<std::pair<std::string, GgufValue>> Writer::metadata() const {
  const std::string arch = c.family == Family::Qwen3Next ? "qwen3next" : "qwen35moe", a = arch + ".";
  auto u = [](int64_t v) { return GgufValue::of_u32(uint32_t(v)); };
  std::vector<std::pair<std::string, GgufValue>> kv = {
      {"general.architecture", GgufValue::of_string(arch)},
      // Not the source's path: the same model written from anywhere gives the same bytes.
      {"general.name", GgufValue::of_string(std::string("moeoracle conversion, ") + family_name(c.family))},
      {"general.alignment", u(32)},
      {a + "block_count", u(c.layers)},
      {a + "context_length", u(262144)},
      {a + "embedding_length", u(c.hidden)},
      {a + "attention.head_count", u(c.attn_heads)},
      {a + "attention.head_count_kv", u(c.kv_heads)},
      {a + "attention.key_length", u(c.head_dim)},
      {a + "attention.value_length", u(c.head_dim)},
      {a + "attention.layer_norm_rms_epsilon", GgufValue::of_f32(c.eps)},
      {a + "rope.freq_base", GgufValue::of_f32(float(c.rope_theta))},
      {a + "rope.dimension_count", u(c.rotary_dim())},
      {a + "expert_count", u(c.experts)},
      {a + "expert_used_count", u(c.experts_per_tok)},
      {a + "expert_feed_forward_length", u(c.moe_inter)},
      {a + "expert_shared_feed_forward_length", u(c.shared_inter)},
      {a + "ssm.conv_kernel", u(c.conv_kernel)},
      {a + "ssm.state_size", u(c.lin_k_dim)},
      {a + "ssm.group_count", u(c.lin_k_heads)},
      {a + "ssm.time_step_rank", u(c.lin_v_heads)},
      {a + "ssm.inner_size", u(c.lin_value_total())},
  };
  MOE_CHECK(double(float(c.rope_theta)) == c.rope_theta,
            "gguf write: rope_theta " << c.rope_theta << " has no exact f32 value (GGUF's rope.freq_base is f32)");
  if (c.dense_inter > 0) kv.push_back({a + "feed_forward_length", u(c.dense_inter)});
  // Text positions are equal in every M-RoPE section: one section of all rotary pairs is the same rope.
  if (c.family == Family::Qwen3_5Moe)
    kv.push_back({a + "rope.dimension_sections",
                  GgufValue::array_of(GgufType::I32, {GgufValue::of_i32(int32_t(c.rotary_dim() / 2)), GgufValue::of_i32(0),
                                                      GgufValue::of_i32(0), GgufValue::of_i32(0)})});
  // Layer kinds: the interval rule when it describes them, else a flag per layer.
  int64_t interval = 0;
  for (int64_t i = 0; i < c.layers && !interval; ++i)
    if (c.layer_kinds[size_t(i)] == LayerKind::Full) interval = i + 1;
  bool rule = interval > 0;
  for (int64_t i = 0; i < c.layers && rule; ++i) rule = (c.layer_kinds[size_t(i)] == LayerKind::Full) == ((i + 1) % interval == 0);
  if (rule) {
    kv.push_back({a + "full_attention_interval", u(interval)});
  } else {
    std::vector<GgufValue> flags;
    for (int64_t i = 0; i < c.layers; ++i) flags.push_back(GgufValue::of_bool(c.layer_kinds[size_t(i)] == LayerKind::Linear));
    kv.push_back({a + "attention.recurrent_layers", GgufValue::array_of(GgufType::BOOL, std::move(flags))});
  }
  return kv;
}

// deepseek2's keys as llama.cpp's converter writes them (MLA as MQA over the latent).
std::vector<std::pair<std::string, GgufValue>> Writer::metadata_deepseek2() const {
  const MlaConfig& mc = c.mla;
  const std::string a = "deepseek2.";
  auto u = [](int64_t v) { return GgufValue::of_u32(uint32_t(v)); };
  auto f32 = [&](const char* what, double v) {
    MOE_CHECK(double(float(v)) == v, "gguf write: " << what << " = " << v << " has no exact f32 value (GGUF stores it as f32)");
    return GgufValue::of_f32(float(v));
  };
  // llama.cpp derives the RoPE's magnitude factor from mscale_all_dim alone (it takes mscale equal).
  MOE_CHECK(mc.mscale == mc.mscale_all_dim,
            "gguf write: " << m.dir() << ": YaRN mscale " << mc.mscale << " differs from mscale_all_dim " << mc.mscale_all_dim
                           << "; llama.cpp's deepseek2 takes them equal, so no GGUF holds this model");
  MOE_CHECK(mc.rope_interleave, "gguf write: " << m.dir() << ": rope_interleave is false; llama.cpp's deepseek2 rotates "
                                                              "adjacent pairs (rope_interleave true) only");
  const float log_multiplier = float(0.1 * mc.mscale_all_dim);
  MOE_CHECK(mscale_all_dim_from_log_multiplier(log_multiplier) == mc.mscale_all_dim,
            "gguf write: " << m.dir() << ": YaRN mscale_all_dim " << mc.mscale_all_dim << " does not survive deepseek2's f32 "
                           << "yarn_log_multiplier (0.1 x it, read back as " << mscale_all_dim_from_log_multiplier(log_multiplier) << ")");
  std::vector<std::pair<std::string, GgufValue>> kv = {
      {"general.architecture", GgufValue::of_string("deepseek2")},
      {"general.name", GgufValue::of_string(std::string("moeoracle conversion, ") + family_name(c.family))},
      {"general.alignment", u(32)},
      {a + "block_count", u(c.layers)},
      {a + "context_length", u(163840)},
      {a + "embedding_length", u(c.hidden)},
      {a + "feed_forward_length", u(c.dense_inter)},
      {a + "attention.head_count", u(c.attn_heads)},
      {a + "attention.head_count_kv", u(1)},
      {a + "attention.key_length", u(mc.kv_lora_rank + mc.qk_rope_dim)},
      {a + "attention.value_length", u(mc.kv_lora_rank)},
      {a + "attention.key_length_mla", u(mc.qk_nope_dim + mc.qk_rope_dim)},
      {a + "attention.value_length_mla", u(mc.v_head_dim)},
      {a + "attention.q_lora_rank", u(mc.q_lora_rank)},
      {a + "attention.kv_lora_rank", u(mc.kv_lora_rank)},
      {a + "attention.layer_norm_rms_epsilon", GgufValue::of_f32(c.eps)},
      {a + "rope.freq_base", f32("rope_theta", c.rope_theta)},
      {a + "rope.dimension_count", u(mc.qk_rope_dim)},
      {a + "rope.scaling.type", GgufValue::of_string("yarn")},
      {a + "rope.scaling.factor", f32("rope factor", mc.yarn_factor)},
      {a + "rope.scaling.original_context_length", u(mc.original_max_position)},
      {a + "rope.scaling.yarn_log_multiplier", GgufValue::of_f32(log_multiplier)},
      {a + "rope.scaling.yarn_beta_fast", f32("beta_fast", mc.beta_fast)},
      {a + "rope.scaling.yarn_beta_slow", f32("beta_slow", mc.beta_slow)},
      {a + "leading_dense_block_count", u(mc.first_k_dense_replace)},
      {a + "expert_count", u(c.experts)},
      {a + "expert_used_count", u(c.experts_per_tok)},
      {a + "expert_feed_forward_length", u(c.moe_inter)},
      {a + "expert_shared_count", u(mc.n_shared_experts)},
      {a + "expert_weights_scale", f32("routed_scaling_factor", mc.routed_scaling_factor)},
      {a + "expert_weights_norm", GgufValue::of_bool(c.norm_topk_prob)},
      {a + "expert_gating_func", u(2)},  // sigmoid
      {a + "expert_group_count", u(mc.n_group)},
      {a + "expert_group_used_count", u(mc.topk_group)},
  };
  return kv;
}

}  // namespace

double mscale_all_dim_from_log_multiplier(float stored) {
  char buf[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(stored) / 0.1);
    const double v = std::strtod(buf, nullptr);
    if (float(0.1 * v) == stored) return v;
  }
  return double(stored) / 0.1;
}

void write_gguf_model(const Model& m, const std::string& path) {
  const ModelConfig& c = m.config();
  MOE_CHECK(!m.is_gguf(), "gguf write: " << m.dir() << " is a GGUF file already");
  Writer w{m, c, {}};
  w.mat("token_embd.weight", m.embed());
  const bool tied = m.lm_head().q.w == m.embed().q.w;
  if (!tied) w.mat("output.weight", m.lm_head());
  w.t.add_f32("output_norm.weight", {c.hidden}, m.final_norm());
  for (int64_t i = 0; i < c.layers; ++i) w.layer(i);
  write_gguf(path, c.family == Family::DeepseekV3 ? w.metadata_deepseek2() : w.metadata(), w.t.out);
}

}  // namespace moe
