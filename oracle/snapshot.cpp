#include "oracle/snapshot.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "core/check.h"
#include "oracle/atomic_file.h"

namespace moe {
namespace {

bool has_mla(const ModelConfig& c) {
  for (LayerKind k : c.layer_kinds)
    if (k == LayerKind::Mla) return true;
  return false;
}

// Layers whose state is a length plus rows (GQA KV or MLA latent / rope-K): the rest are linear.
bool has_rows(LayerKind k) { return k != LayerKind::Linear; }

std::vector<uint32_t> header_words(const ModelConfig& c, int version, const std::string& src) {
  const bool mla = has_mla(c);
  // MLA rows exist only in v2 (docs/ops/formats.md "MFLX snapshot"; the Rust reader rejects v1 for MLA variants).
  MOE_CHECK(!mla || version == 2, src << ": version " << version
                                      << " cannot hold MLA layers (DeepSeek-V3): only version 2 has header words 8-9");
  const uint32_t conv_bytes = uint32_t((c.conv_kernel - 1) * c.conv_dim() * 4);
  const uint32_t ssm_bytes = uint32_t(c.lin_v_heads * c.lin_v_dim * c.lin_k_dim * 4);
  // FULL_ATTN_INTERVAL of the header: the spacing of full-attention layers (4 for every Qwen variant).
  uint32_t interval = 0;
  // Every MLA layer is a full-attention layer: interval 1 for DeepSeek-V3 (docs/ops/models.md "Shape constants").
  for (size_t i = 0; i < c.layer_kinds.size(); ++i)
    if (has_rows(c.layer_kinds[i])) { interval = uint32_t(i + 1); break; }
  // MLA: NUM_KV_HEADS = num_key_value_heads (= the query heads; 128 in Cogito) and HEAD_DIM =
  // qk_nope + qk_rope (192), as docs/ops/models.md "Shape constants" (Cogito's column) gives them and
  // MFR's Cogito variant writes them (variants.rs: num_kv_heads 128, head_dim 192, full_attn_interval 1, no linear
  // heads, so words 6-7 are 0); no engine reads them for MLA (words 8-9 size the rows).
  const uint32_t head_dim = uint32_t(mla ? c.mla.qk_nope_dim + c.mla.qk_rope_dim : c.head_dim);
  std::vector<uint32_t> h{kMflxMagic, uint32_t(version), uint32_t(c.layers), interval, uint32_t(c.kv_heads),
                          head_dim, conv_bytes, ssm_bytes};
  // kv_lora_rank, qk_rope_head_dim: 0 for Qwen (no MLA)
  if (version == 2) h.push_back(uint32_t(c.mla.kv_lora_rank)), h.push_back(uint32_t(c.mla.qk_rope_dim));
  return h;
}

const char* kWordNames[] = {"magic", "version", "NUM_LAYERS", "FULL_ATTN_INTERVAL", "NUM_KV_HEADS", "HEAD_DIM",
                            "linear_conv_bytes", "linear_ssm_bytes", "kv_lora_rank", "qk_rope_head_dim"};

template <class T>
void put(std::vector<uint8_t>& out, const T* p, size_t n) {
  const auto* b = reinterpret_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n * sizeof(T));
}

}  // namespace

std::vector<uint8_t> snapshot_save(const ModelConfig& c, const ModelState& s, int version) {
  MOE_CHECK(version == 1 || version == 2, "snapshot: version " << version << ", expected 1 or 2");
  std::vector<uint8_t> out;
  const auto h = header_words(c, version, "MFLX snapshot");
  put(out, h.data(), h.size());
  const int64_t row = c.kv_heads * c.head_dim;
  for (int64_t i = 0; i < c.layers; ++i) {
    const LayerState& l = s.layers[size_t(i)];
    if (c.layer_kinds[size_t(i)] == LayerKind::Full) {
      const int32_t len = int32_t(l.len);
      put(out, &len, 1);
      put(out, l.k_cache.data(), size_t(l.len * row));
      put(out, l.v_cache.data(), size_t(l.len * row));
    } else if (c.layer_kinds[size_t(i)] == LayerKind::Mla) {  // len, latent rows, rope-K rows
      const int32_t len = int32_t(l.len);
      put(out, &len, 1);
      put(out, l.latent.data(), size_t(l.len * c.mla.kv_lora_rank));
      put(out, l.kpe.data(), size_t(l.len * c.mla.qk_rope_dim));
    } else {
      put(out, l.conv.data(), l.conv.size());
      put(out, l.ssm.data(), l.ssm.size());
    }
  }
  return out;
}

void snapshot_save_file(const std::string& path, const ModelConfig& c, const ModelState& s, int version) {
  write_file_atomic(path, "the MFLX snapshot", snapshot_save(c, s, version));
}

void snapshot_load(const std::vector<uint8_t>& bytes, const ModelConfig& c, ModelState& state,
                   const std::string& src, int64_t room) {
  MOE_CHECK(bytes.size() >= 8, src << ": " << bytes.size() << " bytes, too short for an MFLX header");
  uint32_t w0, w1;
  std::memcpy(&w0, bytes.data(), 4);
  std::memcpy(&w1, bytes.data() + 4, 4);
  MOE_CHECK(w0 == kMflxMagic, src << ": magic 0x" << std::hex << w0 << ", expected 0x" << kMflxMagic << std::dec
                                  << " (MFLX)");
  MOE_CHECK(w1 == 1 || w1 == 2, src << ": snapshot version " << w1 << ", this reader knows 1 and 2");
  const auto want = header_words(c, int(w1), src);
  MOE_CHECK(bytes.size() >= want.size() * 4, src << ": truncated header (" << bytes.size() << " bytes)");
  for (size_t i = 2; i < want.size(); ++i) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    MOE_CHECK(v == want[i], src << ": header " << kWordNames[i] << " = " << v << ", this model has " << want[i]);
  }
  // Preflight: walk the whole body before touching the state.
  const int64_t row = c.kv_heads * c.head_dim;
  size_t off = want.size() * 4;
  std::vector<int64_t> lens(size_t(c.layers), 0);
  int64_t max_len = 0;
  for (int64_t i = 0; i < c.layers; ++i) {
    if (has_rows(c.layer_kinds[size_t(i)])) {
      const bool mla = c.layer_kinds[size_t(i)] == LayerKind::Mla;
      MOE_CHECK(bytes.size() - off >= 4, src << ": truncated at layer " << i << " (KV length)");
      int32_t len;
      std::memcpy(&len, bytes.data() + off, 4);
      off += 4;
      MOE_CHECK(len >= 0, src << ": layer " << i << " KV length " << len << " < 0");
      // Rows that fit what remains, compared before multiplying (2^31 rows x a big row overflows).
      const uint64_t row_bytes = uint64_t((mla ? c.mla.kv_lora_rank + c.mla.qk_rope_dim : 2 * row) * 4),
                     remain = bytes.size() - off;
      MOE_CHECK(uint64_t(len) <= remain / row_bytes, src << ": truncated at layer " << i << ": " << len << " KV rows need "
                                                         << row_bytes << " bytes each, " << remain << " remain");
      const size_t need = size_t(uint64_t(len) * row_bytes);
      off += need;
      lens[size_t(i)] = len;
      max_len = std::max<int64_t>(max_len, len);
    } else {
      const size_t need = size_t(((c.conv_kernel - 1) * c.conv_dim() + c.lin_v_heads * c.lin_v_dim * c.lin_k_dim) * 4);
      MOE_CHECK(bytes.size() - off >= need, src << ": truncated at linear layer " << i << ": needs " << need
                                                << " bytes, " << bytes.size() - off << " remain");
      off += need;
    }
  }
  for (int64_t i = 0; i < c.layers; ++i)
    MOE_CHECK(!has_rows(c.layer_kinds[size_t(i)]) || lens[size_t(i)] == max_len,
              src << ": full-attention layers hold different KV lengths (" << lens[size_t(i)] << " at layer " << i
                  << ", " << max_len << " elsewhere)");
  // Restore into a fresh state, then swap: no partial state on failure.
  ModelState fresh = ModelState::make(c, std::max(state.capacity, max_len + room));
  off = want.size() * 4;
  for (int64_t i = 0; i < c.layers; ++i) {
    LayerState& l = fresh.layers[size_t(i)];
    if (c.layer_kinds[size_t(i)] == LayerKind::Full) {
      off += 4;
      const size_t n = size_t(lens[size_t(i)] * row);
      std::memcpy(l.k_cache.data(), bytes.data() + off, n * 4), off += n * 4;
      std::memcpy(l.v_cache.data(), bytes.data() + off, n * 4), off += n * 4;
      l.len = lens[size_t(i)];
    } else if (c.layer_kinds[size_t(i)] == LayerKind::Mla) {
      off += 4;
      const size_t nl = size_t(lens[size_t(i)] * c.mla.kv_lora_rank), nr = size_t(lens[size_t(i)] * c.mla.qk_rope_dim);
      std::memcpy(l.latent.data(), bytes.data() + off, nl * 4), off += nl * 4;
      std::memcpy(l.kpe.data(), bytes.data() + off, nr * 4), off += nr * 4;
      l.len = lens[size_t(i)];
    } else {
      std::memcpy(l.conv.data(), bytes.data() + off, l.conv.size() * 4), off += l.conv.size() * 4;
      std::memcpy(l.ssm.data(), bytes.data() + off, l.ssm.size() * 4), off += l.ssm.size() * 4;
    }
  }
  fresh.pos = max_len;  // positions and KV length coincide (docs/ops/attention.md "Full-attention layer" step 6)
  state = std::move(fresh);
}

void snapshot_load_file(const std::string& path, const ModelConfig& c, ModelState& state, int64_t room) {
  std::ifstream f(path, std::ios::binary);
  MOE_CHECK(f, path << ": cannot open snapshot");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  snapshot_load(bytes, c, state, path, room);
}

}  // namespace moe
