/* moeoracle_ggml_tap.h: a ggml graph-evaluation callback that dumps the tensors of a llama.cpp (or
 * any ggml) run through the moeoracle tap writer, under the names llama.cpp gives them
 * ("l_out-3", "ffn_out-3", "result_output"); the map files in engines/llama-cpp/ map those names to the
 * oracle's taps for `moeoracle diff --map` / `drift --map` (engines/llama-cpp/README.md).
 *
 * Single header, C99 (also C++), on top of ggml.h, ggml-backend.h and moeoracle/tap_writer.h. In
 * the one file that defines MOEORACLE_TAP_WRITER_IMPLEMENTATION, include this after it:
 *
 *     #define MOEORACLE_TAP_WRITER_IMPLEMENTATION
 *     #include "moeoracle/tap_writer.h"
 *     #include "moeoracle_ggml_tap.h"
 *
 *     static const char *keep[] = {"l_out-", "ffn_out-", "inp_embd", "result_norm", "result_output", NULL};
 *     moe_ggml_tap tap = {0};
 *     tap.w = moe_tap_writer_new();
 *     moe_tap_open(tap.w, "llama.safetensors");
 *     tap.keep = keep;                                   // NULL keeps every f32/f16/bf16/i32 tensor
 *     params.cb_eval = moe_ggml_tap_cb;                  // llama.cpp: common_params / llama_context_params
 *     params.cb_eval_user_data = &tap;                   // (or ggml_backend_sched_set_eval_callback)
 *     ... run the prompt with every token's logits requested ...
 *     moe_ggml_tap_finish(&tap);                         // closes the file; prints the first error
 *
 * How it works: ggml asks the callback, per graph node, whether it wants the node (ask = true: the
 * name starts with one of `keep` and its type is f32, f16, bf16 or i32); a wanted node ends its
 * scheduler split so that its data is computed when the callback is called again (ask = false).
 * The callback then copies the tensor to the host (ggml_backend_tensor_get: any backend) and
 * appends its rows, [ne1 * ne2 * ne3, ne0] in ggml's order (one row per token for llama.cpp's
 * activations), to the tap of the same name: a prefill appends T rows, each decode step one, as the
 * oracle's dumps lay them out. Non-contiguous views are skipped (llama.cpp's named activations are
 * contiguous). A failed write stops the dump, never the run: the callback always returns true, and
 * moe_ggml_tap_finish reports the writer's first error. */
#ifndef MOEORACLE_GGML_TAP_H
#define MOEORACLE_GGML_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "moeoracle/tap_writer.h"

typedef struct moe_ggml_tap {
  moe_tap_writer *w;       /* open writer (moe_tap_open) */
  const char *const *keep; /* name prefixes to dump, NULL-terminated; NULL: every tensor of a kept type */
  void *buf;               /* host copy of the current tensor (grown as needed, freed by finish) */
  size_t cap;
  long long tensors, rows; /* what was dumped */
} moe_ggml_tap;

/* The tap writer's element type for a ggml type, or -1 for a type the dump does not keep. */
static inline int moe_ggml_tap__dtype(enum ggml_type t) {
  switch (t) {
    case GGML_TYPE_F32: return MOE_TAP_F32;
    case GGML_TYPE_F16: return MOE_TAP_F16;
    case GGML_TYPE_BF16: return MOE_TAP_BF16;
    case GGML_TYPE_I32: return MOE_TAP_I32;
    default: return -1;
  }
}

static inline int moe_ggml_tap__wanted(const moe_ggml_tap *tap, const struct ggml_tensor *t) {
  const char *const *k;
  if (moe_ggml_tap__dtype(t->type) < 0 || t->name[0] == '\0') return 0;
  if (!tap->keep) return 1;
  for (k = tap->keep; *k; ++k)
    if (strncmp(t->name, *k, strlen(*k)) == 0) return 1;
  return 0;
}

/* The ggml_backend_sched_eval_callback (llama.cpp's cb_eval). */
static inline bool moe_ggml_tap_cb(struct ggml_tensor *t, bool ask, void *user_data) {
  moe_ggml_tap *tap = (moe_ggml_tap *)user_data;
  size_t bytes;
  if (ask) return moe_ggml_tap__wanted(tap, t) != 0;
  if (!moe_ggml_tap__wanted(tap, t) || !ggml_is_contiguous(t)) return true;
  bytes = ggml_nbytes(t);
  if (bytes > tap->cap) {
    void *grown = realloc(tap->buf, bytes);
    if (!grown) return true; /* out of memory: the tap is missing from the dump, the run goes on */
    tap->buf = grown, tap->cap = bytes;
  }
  ggml_backend_tensor_get(t, tap->buf, 0, bytes);
  if (moe_tap_append_rows(tap->w, t->name, moe_ggml_tap__dtype(t->type), tap->buf, (int64_t)ggml_nrows(t),
                          (int64_t)t->ne[0]) == MOE_TAP_OK) {
    tap->tensors += 1, tap->rows += (long long)ggml_nrows(t);
  }
  return true;
}

/* Closes the writer and frees the buffer; 0 when the file was written, else prints the writer's
 * first error to stderr and returns its status. The writer is freed too. */
static inline int moe_ggml_tap_finish(moe_ggml_tap *tap) {
  int rc = moe_tap_close(tap->w);
  if (rc != MOE_TAP_OK) fprintf(stderr, "moeoracle tap dump: %s\n", moe_tap_error(tap->w));
  moe_tap_writer_free(tap->w);
  free(tap->buf);
  tap->w = NULL, tap->buf = NULL, tap->cap = 0;
  return rc;
}

#endif /* MOEORACLE_GGML_TAP_H */
