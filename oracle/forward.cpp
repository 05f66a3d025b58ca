#include "oracle/forward.h"

#include <algorithm>

#include "core/check.h"

namespace moe {
namespace {

std::string L(int64_t i, const char* what) { return "model.layers." + std::to_string(i) + "." + what; }

}  // namespace

Forward::Forward(const Model& model, OpBackend& backend, ForwardOptions opt)
    : model_(model), be_(backend), qk_eps_(opt.qk_norm_eps) {
  const ModelConfig& c = model.config();
  k_ = opt.experts_per_tok > 0 ? opt.experts_per_tok : c.experts_per_tok;
  MOE_CHECK(k_ >= 1 && k_ <= c.experts, "forward: experts per token " << k_ << " out of range [1, " << c.experts << "]");
}

void Forward::tap(const std::string& name, std::span<const float> data, int64_t T) {
  if (taps_ && taps_->wants(name)) taps_->put(name, data, T, int64_t(data.size()) / T);
}

void Forward::feed(const std::string& name, std::span<float> data, int64_t T) {
  if (!taps_ || !taps_->wants(name)) return;
  taps_->put(name, data, T, int64_t(data.size()) / T);
  taps_->substitute(name, data, T, int64_t(data.size()) / T);
}

void Forward::feed_i32(const std::string& name, std::span<int32_t> data, int64_t T) {
  if (!taps_ || !taps_->wants(name)) return;
  taps_->put_i32(name, data, T, int64_t(data.size()) / T);
  taps_->substitute_i32(name, data, T, int64_t(data.size()) / T);
}

void Forward::locate(const std::string& where) { be_.locate(where); }

void Forward::matmul(const std::string& where, const Weight& w, std::span<const float> x, int64_t T,
                     std::span<float> y) {
  locate(where);
  std::vector<float> xp;
  if (!w.x_perm.empty()) {  // x in the matrix's column order
    const int64_t n = w.cols();
    xp.resize(x.size());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < n; ++c) xp[size_t(t * n + c)] = x[size_t(t * n + w.x_perm[size_t(c)])];
    x = xp;
  }
  if (w.ggml) return be_.matvec_ggml(MatvecGgmlParams{w.g.type, w.g.rows, w.g.cols, T}, w.g, x, y);
  be_.matmul_q(MatmulQParams{quant_params(w.q), T}, w.q, x, y);
}

void Forward::expert_ggml(const GgmlExpert& e, std::span<const float> x, int64_t T, std::span<float> y) {
  const int64_t I = e.gate.rows;
  std::vector<float> g(size_t(T * I)), u(g.size());
  be_.matvec_ggml(MatvecGgmlParams{e.gate.type, I, e.gate.cols, T}, e.gate, x, g);
  be_.matvec_ggml(MatvecGgmlParams{e.up.type, I, e.up.cols, T}, e.up, x, u);
  be_.glu(GluParams{T, I, int64_t(GluAct::Silu)}, g, u, g);
  be_.matvec_ggml(MatvecGgmlParams{e.down.type, e.down.rows, I, T}, e.down, g, y);
}

// x [T, d] = the embedding rows of the tokens: the embedding op (MLX tables) or one dequant_ggml
// row per token (GGUF tables, as llama.cpp's get_rows).
void Forward::embed(std::span<const int32_t> tokens, std::span<float> x) {
  const ModelConfig& c = model_.config();
  const int64_t T = int64_t(tokens.size()), d = c.hidden;
  const Weight& w = model_.embed();
  locate("model.embed_tokens");
  if (!w.ggml) {
    EmbeddingParams p;
    p.tokens = T, p.vocab = c.vocab, p.dim = d, p.bits = w.q.bits, p.group_size = w.q.group_size;
    return be_.embedding(p, w.q, tokens, x);
  }
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = tokens[size_t(t)];
    MOE_CHECK(id >= 0 && id < c.vocab,
              "forward: token id " << id << " at position " << t << " out of range [0, " << c.vocab << ")");
    be_.dequant_ggml(DequantGgmlParams{w.g.type, 1, d}, w.g.row_block(id, 1), x.subspan(size_t(t * d), size_t(d)));
  }
}

std::vector<float> Forward::run(std::span<const int32_t> tokens, ModelState& state, TapSink* taps) {
  const ModelConfig& c = model_.config();
  const int64_t T = int64_t(tokens.size()), d = c.hidden;
  MOE_CHECK(T > 0, "forward: no tokens");
  MOE_CHECK(int64_t(state.layers.size()) == c.layers, "forward: state has " << state.layers.size()
                                                                            << " layers, the model " << c.layers);
  taps_ = taps;
  std::vector<float> x(size_t(T * d)), xn(x.size()), mix(x.size()), h(x.size());
  embed(tokens, x);
  if (taps_ && taps_->wants("tokens")) taps_->put_i32("tokens", tokens, T, 1);
  feed("model.embed_tokens.out", x, T);
  RmsNormParams norm;
  norm.rows = T, norm.dim = d, norm.eps = c.eps, norm.add_one = false;
  ResidualAddParams add;
  add.n = T * d;
  for (int64_t i = 0; i < c.layers; ++i) {
    const LayerWeights& lw = model_.layer(i);
    LayerState& st = state.layers[size_t(i)];
    locate(L(i, "input_layernorm"));
    be_.rmsnorm(norm, x, lw.input_norm, xn);
    feed(L(i, "input_layernorm.out"), xn, T);
    if (lw.kind == LayerKind::Linear) {
      linear_attention(i, xn, T, st, mix);
      feed(L(i, "linear_attn.out"), mix, T);
    } else if (lw.kind == LayerKind::Mla) {
      mla_attention(i, xn, T, state.pos, st, mix);
      feed(L(i, "self_attn.out"), mix, T);
    } else {
      full_attention(i, xn, T, state.pos, st, mix);
      feed(L(i, "self_attn.out"), mix, T);
    }
    locate(L(i, "residual"));
    be_.residual_add(add, x, mix, h);
    locate(L(i, "post_attention_layernorm"));
    be_.rmsnorm(norm, h, lw.post_norm, xn);
    feed(L(i, "post_attention_layernorm.out"), xn, T);
    mlp(i, h, xn, T, x);  // x <- h + MLP(RMSNorm(h))
    feed(L(i, "out"), x, T);
  }
  locate("model.norm");
  be_.rmsnorm(norm, x, model_.final_norm(), xn);
  feed("model.norm.out", xn, T);
  std::vector<float> logits(size_t(T * c.vocab));
  matmul("lm_head", model_.lm_head(), xn, T, logits);
  tap("logits", logits, T);
  state.pos += T;
  taps_ = nullptr;
  return logits;
}

void Forward::linear_attention(int64_t i, std::span<const float> xn, int64_t T, LayerState& st,
                               std::span<float> out) {
  const ModelConfig& c = model_.config();
  const LinearAttnWeights& w = model_.layer(i).lin;
  const int64_t C = c.conv_dim(), Kt = c.lin_key_total(), Vt = c.lin_value_total(), Hv = c.lin_v_heads,
                Hk = c.lin_k_heads;
  std::vector<float> qkv(size_t(T * C)), z(size_t(T * Vt)), b(size_t(T * Hv)), a(size_t(T * Hv));
  matmul(L(i, "linear_attn.in_proj_qkv"), w.qkv, xn, T, qkv);
  matmul(L(i, "linear_attn.in_proj_z"), w.z, xn, T, z);
  matmul(L(i, "linear_attn.in_proj_b"), w.b, xn, T, b);
  matmul(L(i, "linear_attn.in_proj_a"), w.a, xn, T, a);
  feed(L(i, "linear_attn.in_proj_qkv.out"), qkv, T);
  feed(L(i, "linear_attn.in_proj_z.out"), z, T);

  std::vector<float> conv(qkv.size());
  Conv1dStepParams cp;
  cp.tokens = T, cp.channels = C, cp.kernel = c.conv_kernel;
  locate(L(i, "linear_attn.conv"));
  be_.conv1d_step(cp, qkv, w.conv_w, st.conv, conv);
  feed(L(i, "linear_attn.conv"), conv, T);

  // Split each token's conv output into q | k | v, then normalise q and k per key head.
  std::vector<float> q(size_t(T * Kt)), k(size_t(T * Kt)), v(size_t(T * Vt));
  for (int64_t t = 0; t < T; ++t) {
    const float* ct = conv.data() + t * C;
    std::copy(ct, ct + Kt, q.begin() + t * Kt);
    std::copy(ct + Kt, ct + 2 * Kt, k.begin() + t * Kt);
    std::copy(ct + 2 * Kt, ct + C, v.begin() + t * Vt);
  }
  QkNormParams qp;
  qp.tokens = T, qp.heads = Hk, qp.head_dim = c.lin_k_dim;
  // qk_norm computes x / sqrt(sum x^2 / dk + eps): eps = 1e-6 / dk puts HF's 1e-6 inside the sum;
  // the engines' literal 1e-6 puts 1e-6 * dk there.
  qp.eps = qk_eps_ == QkNormEps::Hf ? float(1e-6 / double(c.lin_k_dim)) : 1e-6f;
  locate(L(i, "linear_attn.qk_norm"));
  be_.qk_norm(qp, q, k, q, k);

  std::vector<float> g(size_t(T * Hv)), beta(size_t(T * Hv));
  DecayBetaParams dp;
  dp.tokens = T, dp.heads = Hv;
  locate(L(i, "linear_attn.decay_beta"));
  be_.decay_beta(dp, a, b, w.A_log, w.dt_bias, g, beta);

  std::vector<float> o(size_t(T * Vt));
  DeltaNetParams np;
  np.tokens = T, np.k_heads = Hk, np.v_heads = Hv, np.key_dim = c.lin_k_dim, np.value_dim = c.lin_v_dim;
  locate(L(i, "linear_attn.recurrence"));
  be_.delta_net(np, q, k, v, g, beta, st.ssm, o);
  feed(L(i, "linear_attn.recurrence"), o, T);

  std::vector<float> y(o.size());
  RmsNormGatedParams gp;
  gp.tokens = T, gp.heads = Hv, gp.head_dim = c.lin_v_dim, gp.eps = c.eps;
  locate(L(i, "linear_attn.norm"));
  be_.rmsnorm_gated(gp, o, z, w.norm, y);
  feed(L(i, "linear_attn.norm"), y, T);
  matmul(L(i, "linear_attn.out_proj"), w.out, y, T, out);
}

void Forward::full_attention(int64_t i, std::span<const float> xn, int64_t T, int64_t pos, LayerState& st,
                             std::span<float> out) {
  const ModelConfig& c = model_.config();
  const FullAttnWeights& w = model_.layer(i).full;
  const int64_t H = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim;
  std::vector<float> qg(size_t(T * 2 * H * D)), k(size_t(T * Hkv * D)), v(k.size());
  matmul(L(i, "self_attn.q_proj"), w.q, xn, T, qg);
  matmul(L(i, "self_attn.k_proj"), w.k, xn, T, k);
  matmul(L(i, "self_attn.v_proj"), w.v, xn, T, v);
  feed(L(i, "self_attn.v"), v, T);
  // Per head, q_proj's output is [q (D) | gate (D)] (block split, not interleaved).
  std::vector<float> q(size_t(T * H * D)), gate(q.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t hd = 0; hd < H; ++hd) {
      const float* src = qg.data() + (t * H + hd) * 2 * D;
      std::copy(src, src + D, q.begin() + (t * H + hd) * D);
      std::copy(src + D, src + 2 * D, gate.begin() + (t * H + hd) * D);
    }
  RmsNormParams hn;
  hn.rows = T * H, hn.dim = D, hn.eps = c.eps, hn.add_one = false;
  locate(L(i, "self_attn.q_norm"));
  be_.rmsnorm(hn, q, w.q_norm, q);
  hn.rows = T * Hkv;
  locate(L(i, "self_attn.k_norm"));
  be_.rmsnorm(hn, k, w.k_norm, k);
  feed(L(i, "self_attn.q_norm.out"), q, T);
  feed(L(i, "self_attn.k_norm.out"), k, T);

  std::vector<int64_t> positions(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) positions[size_t(t)] = pos + t;
  RopeParams rp;
  rp.tokens = T, rp.heads = H, rp.head_dim = D, rp.rotary_dim = c.rotary_dim(), rp.theta = c.rope_theta;
  locate(L(i, "self_attn.rope_q"));
  be_.rope(rp, positions, q, q);
  rp.heads = Hkv;
  locate(L(i, "self_attn.rope_k"));
  be_.rope(rp, positions, k, k);
  feed(L(i, "self_attn.q"), q, T);
  feed(L(i, "self_attn.k"), k, T);

  std::vector<float> o(size_t(T * H * D));
  AttentionParams ap;
  ap.tokens = T, ap.q_heads = H, ap.kv_heads = Hkv, ap.head_dim = D, ap.past = st.len;
  ap.capacity = int64_t(st.k_cache.size()) / (Hkv * D), ap.scale = 0.0f;
  MOE_CHECK(st.len + T <= ap.capacity, "forward: layer " << i << " KV cache holds " << ap.capacity
                                                         << " positions; " << st.len + T << " needed");
  locate(L(i, "self_attn.attn"));
  be_.attention(ap, q, gate, k, v, st.k_cache, st.v_cache, o);
  st.len += T;
  feed(L(i, "self_attn.attn"), o, T);
  matmul(L(i, "self_attn.o_proj"), w.o, o, T, out);
}

void Forward::mlp(int64_t i, std::span<const float> h, std::span<const float> hn, int64_t T, std::span<float> out) {
  const ModelConfig& c = model_.config();
  const LayerWeights& lw = model_.layer(i);
  const int64_t d = c.hidden;
  std::vector<float> sh(size_t(T * d));
  SwigluExpertParams sp;
  sp.tokens = T, sp.hidden = d, sp.bits = lw.mlp.shared.gate.bits;
  const bool ggml = model_.is_gguf();
  if (!lw.moe) {  // Qwen3-Next dense MLP layer: x = h + MLP(h_norm)
    sp.inter = c.dense_inter;
    locate(L(i, "mlp.dense"));
    if (ggml) expert_ggml(lw.mlp.shared_ggml, hn, T, sh);
    else be_.swiglu_expert(sp, lw.mlp.shared, hn, sh);
    feed(L(i, "mlp.out"), sh, T);
    ResidualAddParams add;
    add.n = T * d;
    locate(L(i, "mlp.residual"));
    be_.residual_add(add, h, sh, out);
    return;
  }
  if (c.router == RouterKind::NoauxTc) return moe_noaux(i, h, hn, T, out);
  const int64_t E = c.experts, K = k_;
  std::vector<float> logits(size_t(T * E));
  matmul(L(i, "mlp.gate"), lw.mlp.router, hn, T, logits);
  feed(L(i, "mlp.gate.out"), logits, T);
  std::vector<int32_t> idx(size_t(T * K));
  std::vector<float> wts(size_t(T * K));
  RouterTopkParams rp;
  rp.tokens = T, rp.experts = E, rp.k = K, rp.renormalize = c.norm_topk_prob;
  locate(L(i, "mlp.router"));
  be_.router_topk(rp, logits, idx, wts);
  feed_i32(L(i, "mlp.experts.idx"), idx, T);
  feed(L(i, "mlp.experts.weight"), wts, T);

  sp.inter = c.shared_inter;
  locate(L(i, "mlp.shared_expert"));
  if (ggml) expert_ggml(lw.mlp.shared_ggml, hn, T, sh);
  else be_.swiglu_expert(sp, lw.mlp.shared, hn, sh);
  feed(L(i, "mlp.shared_expert.out"), sh, T);
  std::vector<float> gamma(static_cast<size_t>(T));
  matmul(L(i, "mlp.shared_expert_gate"), lw.mlp.shared_expert_gate, hn, T, gamma);
  feed(L(i, "mlp.shared_expert_gate.out"), gamma, T);

  combine_experts(i, h, hn, T, idx, wts, sh, gamma, false, out);
}

void Forward::combine_experts(int64_t i, std::span<const float> h, std::span<const float> hn, int64_t T,
                              std::span<const int32_t> idx, std::span<const float> wts, std::span<const float> sh,
                              std::span<const float> gamma, bool routed_tap, std::span<float> out) {
  const int64_t d = model_.config().hidden;
  std::vector<float> e(size_t(T * k_ * d));
  routed_experts(i, hn, T, idx, e);
  MoeCombineParams mp;
  mp.tokens = T, mp.dim = d, mp.k = k_, mp.gated = !gamma.empty();
  locate(L(i, "mlp.combine"));
  be_.moe_combine(mp, h, e, wts, sh, gamma, out);
  // The block's parts without the residual: the routed sum alone (HF's mlp.experts output) and
  // routed + shared (mlp.out).
  const bool want_e = routed_tap && taps_ && taps_->wants(L(i, "mlp.experts.out"));
  const bool want_m = taps_ && taps_->wants(L(i, "mlp.out"));
  if (!want_e && !want_m) return;
  std::vector<float> zero(size_t(T * d), 0.0f), part(zero.size());
  locate(L(i, "mlp.combine_tap"));
  if (want_e) be_.moe_combine(mp, zero, e, wts, zero, gamma, part), tap(L(i, "mlp.experts.out"), part, T);
  if (want_m) be_.moe_combine(mp, zero, e, wts, sh, gamma, part), tap(L(i, "mlp.out"), part, T);
}

// Routed experts, token by token in router slot order (the engines' decode path): e[t, s] =
// expert idx[t, s] applied to token t's normed hidden.
void Forward::routed_experts(int64_t i, std::span<const float> hn, int64_t T, std::span<const int32_t> idx,
                             std::span<float> e) {
  const ModelConfig& c = model_.config();
  const int64_t d = c.hidden, K = k_;
  SwigluExpertParams ep;
  ep.tokens = 1, ep.hidden = d, ep.inter = c.moe_inter;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < K; ++s) {
      if (model_.is_gguf()) {
        be_.locate(L(i, "mlp.experts.slot") + std::to_string(s), t);
        expert_ggml(model_.expert_ggml(i, idx[size_t(t * K + s)]), hn.subspan(size_t(t * d), size_t(d)), 1,
                    e.subspan(size_t((t * K + s) * d), size_t(d)));
        continue;
      }
      const ExpertWeights ew = model_.expert(i, idx[size_t(t * K + s)]);
      ep.bits = ew.gate.bits;
      be_.locate(L(i, "mlp.experts.slot") + std::to_string(s), t);
      be_.swiglu_expert(ep, ew, hn.subspan(size_t(t * d), size_t(d)), e.subspan(size_t((t * K + s) * d), size_t(d)));
    }
}

}  // namespace moe
