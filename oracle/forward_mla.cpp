// The DeepSeek-V3 / Cogito-V2 pieces of the one forward (forward.h): MLA attention
// (docs/ops/mla.md "MLA attention"; HF transformers 5.17 DeepseekV3Attention) and the noaux_tc
// MoE block (docs/ops/moe.md "noaux_tc router"; HF DeepseekV3MoE). Tap names are HF's module paths as the golden
// (fixtures/hf_golden/make_ds3_golden.py) records them.
#include <algorithm>

#include "core/check.h"
#include "oracle/forward.h"

namespace moe {
namespace {

std::string L(int64_t i, const char* what) { return "model.layers." + std::to_string(i) + "." + what; }

}  // namespace

// HF: q = q_b(q_a_norm(q_a(x))) split per head [q_nope | q_pe]; kv_a(x) = [latent | k_pe];
// latent = kv_a_norm(latent); q_pe, k_pe YaRN-rotated; the MLA core over the latent cache; o_proj.
void Forward::mla_attention(int64_t i, std::span<const float> xn, int64_t T, int64_t pos, LayerState& st,
                            std::span<float> out) {
  const ModelConfig& c = model_.config();
  const MlaConfig& m = c.mla;
  const MlaAttnWeights& w = model_.layer(i).mla;
  const int64_t H = c.attn_heads, Dn = m.qk_nope_dim, Dr = m.qk_rope_dim, Dv = m.v_head_dim, Lr = m.kv_lora_rank,
                Q = m.q_lora_rank, Dq = Dn + Dr;
  std::vector<float> qa(size_t(T * Q)), q(size_t(T * H * Dq)), kva(size_t(T * (Lr + Dr)));
  matmul(L(i, "self_attn.q_a_proj"), w.q_a, xn, T, qa);
  feed(L(i, "self_attn.q_a_proj.out"), qa, T);
  RmsNormParams np;
  np.rows = T, np.dim = Q, np.eps = c.eps, np.add_one = false;  // DeepSeek RMSNorm: w x^
  locate(L(i, "self_attn.q_a_layernorm"));
  be_.rmsnorm(np, qa, w.q_a_norm, qa);
  feed(L(i, "self_attn.q_a_layernorm.out"), qa, T);
  matmul(L(i, "self_attn.q_b_proj"), w.q_b, qa, T, q);
  feed(L(i, "self_attn.q_b_proj.out"), q, T);
  matmul(L(i, "self_attn.kv_a_proj_with_mqa"), w.kv_a, xn, T, kva);
  feed(L(i, "self_attn.kv_a_proj_with_mqa.out"), kva, T);

  // Split kv_a's rows into the latent (first L) and the shared rope key (last Dr); q's rope part
  // out of each head [q_nope (Dn) | q_pe (Dr)].
  std::vector<float> latent(size_t(T * Lr)), kpe(size_t(T * Dr)), qpe(size_t(T * H * Dr));
  for (int64_t t = 0; t < T; ++t) {
    const float* src = kva.data() + t * (Lr + Dr);
    std::copy(src, src + Lr, latent.begin() + t * Lr);
    std::copy(src + Lr, src + Lr + Dr, kpe.begin() + t * Dr);
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = q.data() + (t * H + h) * Dq + Dn;
      std::copy(qh, qh + Dr, qpe.begin() + (t * H + h) * Dr);
    }
  }
  np.dim = Lr;
  locate(L(i, "self_attn.kv_a_layernorm"));
  be_.rmsnorm(np, latent, w.kv_a_norm, latent);
  feed(L(i, "self_attn.kv_a_layernorm.out"), latent, T);
  if (taps_ && taps_->wants(L(i, "self_attn.kv_b_proj.out"))) kv_b_tap(i, latent, T);

  std::vector<int64_t> positions(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) positions[size_t(t)] = pos + t;
  RopeYarnParams rp;
  rp.tokens = T, rp.heads = H, rp.rotary_dim = Dr, rp.theta = float(c.rope_theta), rp.factor = float(m.yarn_factor);
  rp.original_max_position = m.original_max_position, rp.beta_fast = float(m.beta_fast);
  rp.beta_slow = float(m.beta_slow), rp.mscale = float(m.mscale), rp.mscale_all_dim = float(m.mscale_all_dim);
  rp.interleaved = m.rope_interleave;
  locate(L(i, "self_attn.rope_q"));
  be_.rope_yarn(rp, positions, qpe, qpe);
  rp.heads = 1;
  locate(L(i, "self_attn.rope_k"));
  be_.rope_yarn(rp, positions, kpe, kpe);
  feed(L(i, "self_attn.q_pe"), qpe, T);  // HF's output order: half-split (rope_yarn.h)
  feed(L(i, "self_attn.k_pe"), kpe, T);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(qpe.begin() + (t * H + h) * Dr, Dr, q.begin() + (t * H + h) * Dq + Dn);

  MlaAttentionParams ap;
  ap.tokens = T, ap.heads = H, ap.nope_dim = Dn, ap.rope_dim = Dr, ap.v_dim = Dv, ap.kv_lora = Lr, ap.past = st.len;
  ap.capacity = int64_t(st.latent.size()) / Lr, ap.bits = w.kv_b.mlx.bits, ap.group_size = w.kv_b.mlx.group_size;
  ap.kv_ggml_type = w.kv_b.ggml ? int64_t(w.kv_b.k_b.type) : -1;
  ap.scale = float(m.softmax_scale());
  MOE_CHECK(st.len + T <= ap.capacity, "forward: layer " << i << " MLA cache holds " << ap.capacity << " positions; "
                                                         << st.len + T << " needed");
  std::vector<float> o(size_t(T * H * Dv));
  locate(L(i, "self_attn.attn"));
  be_.mla_attention(ap, q, latent, kpe, w.kv_b, st.latent, st.kpe, o);
  st.len += T;
  feed(L(i, "self_attn.o_proj.in"), o, T);
  matmul(L(i, "self_attn.o_proj"), w.o, o, T, out);
  feed(L(i, "self_attn.o_proj.out"), out, T);
}

// HF's naive k_nope | v per head, [T, H (Dn + Dv)]: the MLA core never forms it (absorbed), so only
// for the tap. An MLX kv_b through the tier's matmul; llama.cpp's k_b / v_b (k_b transposed per
// head, which no matvec reads) from the exact weights in f64, rounded once.
void Forward::kv_b_tap(int64_t i, std::span<const float> latent, int64_t T) {
  const ModelConfig& c = model_.config();
  const MlaKvB& kv = model_.layer(i).mla.kv_b;
  const int64_t H = c.attn_heads, Dn = c.mla.qk_nope_dim, Dv = c.mla.v_head_dim, Lr = c.mla.kv_lora_rank, D = Dn + Dv;
  std::vector<float> kvb(size_t(T * H * D));
  if (!kv.ggml) {
    matmul(L(i, "self_attn.kv_b_proj_tap"), Weight(kv.mlx), latent, T, kvb);
  } else {
    MlaAttentionParams p;
    p.heads = H, p.nope_dim = Dn, p.v_dim = Dv, p.kv_lora = Lr, p.kv_ggml_type = int64_t(kv.k_b.type);
    std::vector<double> w(size_t(D * Lr));
    for (int64_t h = 0; h < H; ++h) {
      mla_kv_b_head<double>(p, kv, h, w.data(), w.data() + Dn * Lr);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < D; ++r) {
          double acc = 0;
          for (int64_t k = 0; k < Lr; ++k) acc += w[size_t(r * Lr + k)] * double(latent[size_t(t * Lr + k)]);
          kvb[size_t((t * H + h) * D + r)] = float(acc);
        }
    }
  }
  tap(L(i, "self_attn.kv_b_proj.out"), kvb, T);
}

// HF DeepseekV3MoE: logits = gate(h) in f32 from the BF16 weight; noaux_tc picks K experts with
// weights (scaled by routed_scaling_factor); out = h + sum_k w_k e_k + shared(h) (ungated).
void Forward::moe_noaux(int64_t i, std::span<const float> h, std::span<const float> hn, int64_t T,
                        std::span<float> out) {
  const ModelConfig& c = model_.config();
  const MlpWeights& w = model_.layer(i).mlp;
  const int64_t d = c.hidden, E = c.experts, K = k_;
  std::vector<float> logits(size_t(T * E));
  if (w.router_bf16.empty()) {  // a GGUF's router in another type than bf16
    matmul(L(i, "mlp.gate"), w.router, hn, T, logits);
  } else {
    MatvecBf16Params gp;
    gp.rows = E, gp.cols = d;
    for (int64_t t = 0; t < T; ++t) {
      be_.locate(L(i, "mlp.gate"), t);
      be_.matvec_bf16(gp, w.router_bf16, hn.subspan(size_t(t * d), size_t(d)), std::span(logits).subspan(size_t(t * E), size_t(E)));
    }
  }
  feed(L(i, "mlp.gate.out"), logits, T);
  std::vector<int32_t> idx(size_t(T * K));
  std::vector<float> wts(size_t(T * K));
  RouterNoauxParams rp;
  rp.tokens = T, rp.experts = E, rp.k = K, rp.n_group = c.mla.n_group, rp.topk_group = c.mla.topk_group;
  rp.routed_scaling_factor = float(c.mla.routed_scaling_factor), rp.renormalize = c.norm_topk_prob;
  locate(L(i, "mlp.router"));
  be_.router_noaux(rp, logits, w.score_bias, idx, wts);
  feed_i32(L(i, "mlp.experts.idx"), idx, T);
  feed(L(i, "mlp.experts.weight"), wts, T);

  std::vector<float> sh(size_t(T * d));
  locate(L(i, "mlp.shared_experts"));
  if (model_.is_gguf()) {
    expert_ggml(w.shared_ggml, hn, T, sh);
  } else {
    SwigluExpertParams sp;
    sp.tokens = T, sp.hidden = d, sp.inter = c.shared_inter, sp.bits = w.shared.gate.bits;
    be_.swiglu_expert(sp, w.shared, hn, sh);
  }
  feed(L(i, "mlp.shared_experts.out"), sh, T);

  combine_experts(i, h, hn, T, idx, wts, sh, {}, true, out);
}

}  // namespace moe
