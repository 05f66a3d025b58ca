/* engines/llama-cpp/moeoracle_ggml_tap.h driven the way ggml's scheduler drives an eval callback
 * (tests/cli/ggml_tap.sh): a 3-token prefill then 2 decode steps of a 2-layer "model" whose
 * tensors are named as llama.cpp names them, f32 and f16, plus tensors the dump must leave out
 * (a name not kept, a q8_0 tensor, a non-contiguous view). Each tensor is asked for first
 * (ask = true) and handed over computed (ask = false) only when wanted, as ggml does. Besides the
 * callback's dump (OUT) it writes EXPECT, the same rows added directly with the tap writer, for
 * `moeoracle diff OUT EXPECT --threshold 0`. The ggml functions come from the stub headers
 * (tests/tap_writer/ggml_stub/), defined below over plain host memory.
 *   ggml_tap_demo OUT EXPECT */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MOEORACLE_TAP_WRITER_IMPLEMENTATION
#include "moeoracle/tap_writer.h"
#include "moeoracle_ggml_tap.h"

size_t ggml_nbytes(const struct ggml_tensor *t) { return t->nb[3] * (size_t)t->ne[3]; }
int64_t ggml_nrows(const struct ggml_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }
bool ggml_is_contiguous(const struct ggml_tensor *t) {
  return t->nb[1] == t->nb[0] * (size_t)t->ne[0] && t->nb[2] == t->nb[1] * (size_t)t->ne[1] &&
         t->nb[3] == t->nb[2] * (size_t)t->ne[2];
}
void ggml_backend_tensor_get(const struct ggml_tensor *t, void *data, size_t offset, size_t size) {
  memcpy(data, (const char *)t->data + offset, size);
}

enum { D = 8 };

/* A [D, rows] tensor of `type` (f32, f16 or i32) holding value(step, row, col). */
static struct ggml_tensor tensor(const char *name, enum ggml_type type, int64_t rows, void *data) {
  struct ggml_tensor t;
  const size_t es = type == GGML_TYPE_F16 ? 2 : 4;
  memset(&t, 0, sizeof t);
  t.type = type, t.ne[0] = D, t.ne[1] = rows, t.ne[2] = 1, t.ne[3] = 1;
  t.nb[0] = es, t.nb[1] = es * D, t.nb[2] = t.nb[1] * (size_t)rows, t.nb[3] = t.nb[2];
  t.data = data;
  strncpy(t.name, name, sizeof t.name - 1);
  return t;
}

/* An f16 with the value k / 8 for small integers k (exact). */
static uint16_t f16_of_eighths(int k) {
  const double v = k / 8.0;
  int e = 0;
  double m = v < 0 ? -v : v;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  if (m == 0) return sign;
  while (m >= 2) m /= 2, ++e;
  while (m < 1) m *= 2, --e;
  return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((m - 1) * 1024));
}

/* The scheduler's two calls for one node. */
static void eval(moe_ggml_tap *tap, struct ggml_tensor *t) {
  if (moe_ggml_tap_cb(t, true, tap)) moe_ggml_tap_cb(t, false, tap);
}

int main(int argc, char **argv) {
  static const char *keep[] = {"l_out-", "ffn_out-", "result_output", NULL};
  moe_ggml_tap tap;
  moe_tap_writer *expect;
  float rows32[2][3 * D], logits[5][D];
  uint16_t rows16[2][3 * D];
  int step, layer, r, c, k, rc;
  if (argc != 3) return 2;
  memset(&tap, 0, sizeof tap);
  tap.w = moe_tap_writer_new();
  tap.keep = keep;
  expect = moe_tap_writer_new();
  if (moe_tap_open(tap.w, argv[1]) != MOE_TAP_OK || moe_tap_open(expect, argv[2]) != MOE_TAP_OK) return 1;
  for (step = 0, k = 0; step < 3; ++step) { /* step 0: 3-token prefill; 1, 2: one token each */
    const int T = step == 0 ? 3 : 1;
    for (layer = 0; layer < 2; ++layer) {
      char name[32];
      struct ggml_tensor l_out, ffn, skip, q, view;
      int32_t qdata[8] = {0};
      for (r = 0; r < T; ++r)
        for (c = 0; c < D; ++c, ++k) rows32[layer][r * D + c] = (float)k / 4, rows16[layer][r * D + c] = f16_of_eighths(k % 97 - 40);
      snprintf(name, sizeof name, "l_out-%d", layer);
      l_out = tensor(name, GGML_TYPE_F32, T, rows32[layer]);
      snprintf(name, sizeof name, "ffn_out-%d", layer);
      ffn = tensor(name, GGML_TYPE_F16, T, rows16[layer]);
      snprintf(name, sizeof name, "attn_norm-%d", layer);
      skip = tensor(name, GGML_TYPE_F32, T, rows32[layer]);
      q = tensor("ffn_out-q8", GGML_TYPE_Q8_0, 1, qdata);
      view = tensor("l_out-view", GGML_TYPE_F32, T, rows32[layer]);
      view.nb[1] *= 2; /* a strided view: not contiguous */
      eval(&tap, &skip), eval(&tap, &l_out), eval(&tap, &ffn), eval(&tap, &q), eval(&tap, &view);
      snprintf(name, sizeof name, "l_out-%d", layer);
      moe_tap_append_rows(expect, name, MOE_TAP_F32, rows32[layer], T, D);
      snprintf(name, sizeof name, "ffn_out-%d", layer);
      moe_tap_append_rows(expect, name, MOE_TAP_F16, rows16[layer], T, D);
    }
  }
  for (r = 0; r < 5; ++r)
    for (c = 0; c < D; ++c) logits[r][c] = (float)(r * D + c) - 3.5f;
  {
    struct ggml_tensor out = tensor("result_output", GGML_TYPE_F32, 5, logits);
    eval(&tap, &out);
    moe_tap_append_rows(expect, "result_output", MOE_TAP_F32, logits, 5, D);
  }
  printf("dumped %lld tensors, %lld rows\n", tap.tensors, tap.rows);
  rc = moe_ggml_tap_finish(&tap);
  if (moe_tap_close(expect) != MOE_TAP_OK) rc = 1;
  moe_tap_writer_free(expect);
  return rc == MOE_TAP_OK ? 0 : 1;
}
