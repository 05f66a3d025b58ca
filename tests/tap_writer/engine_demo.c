/* A stand-in engine for the tap writer's test (tests/cli/tap_writer.sh): it "decodes" the tokens of
 * an oracle run one at a time and dumps its taps with include/moeoracle/tap_writer.h, the way an
 * engine's decode loop would. Its numbers are the oracle's own (read from the oracle's dump), so
 * every difference `moeoracle diff` finds comes from the dtypes, the names or the perturbation
 * asked for here.
 *
 *   engine_demo MANIFEST DUMP OUT [--names oracle|engine] [--perturb TAP:TOKEN]
 *               [--bad-row] [--abort-before-close]
 *
 * MANIFEST lists the dump's tensors, one "name dtype rows cols byte_offset" line each (the script
 * writes it; the offset is from the start of DUMP). --names oracle writes every tap under its tap
 * name in f32/i32, row by row; --names engine writes some under llama.cpp-style names in f16 and
 * bf16 (the map is tests/tap_writer/engine_map.json) and skips the rest. --perturb scales one
 * token's row of one tap by 1.25 (an engine bug). --bad-row appends one row one value short;
 * --abort-before-close crashes after adding everything. Exit 0 written, 1 the writer failed,
 * 2 bad usage or input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOEORACLE_TAP_WRITER_IMPLEMENTATION
#include "moeoracle/tap_writer.h"

typedef struct {
  char name[256], dtype[8];
  long long rows, cols;
  void *data; /* rows * cols floats or int32s */
} Tap;

enum Mode { SKIP, ROWS, PER_TOKEN, WHOLE };
typedef struct {
  enum Mode mode;
  char name[300]; /* the engine's name; PER_TOKEN: a printf pattern taking the token */
  int dtype;
} Plan;

typedef struct {
  const char *manifest, *dump, *out, *perturb_tap;
  int engine_names, bad_row, abort_before_close;
  long long perturb_token;
} Options;

/* IEEE binary16, round to nearest even; overflow goes to infinity, as an engine's cast would. */
static uint16_t f32_to_f16(float f) {
  uint32_t x, man, half;
  int e;
  memcpy(&x, &f, 4);
  man = x & 0x7FFFFF;
  e = (int)((x >> 23) & 0xFF) - 127 + 15;
  half = (x >> 16) & 0x8000;
  if (((x >> 23) & 0xFF) == 0xFF) return (uint16_t)(half | 0x7C00 | (man ? 0x200 : 0));
  if (e >= 31) return (uint16_t)(half | 0x7C00);
  if (e <= 0) { /* subnormal: the 24-bit significand shifted down to units of 2^-24 */
    uint32_t shift, m, rem, mid;
    if (e < -10) return (uint16_t)half;
    shift = (uint32_t)(14 - e), m = man | 0x800000;
    rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1), m >>= shift;
    if (rem > mid || (rem == mid && (m & 1))) ++m;
    return (uint16_t)(half | m);
  }
  half |= ((uint32_t)e << 10) | (man >> 13);
  if ((man & 0x1FFF) > 0x1000 || ((man & 0x1FFF) == 0x1000 && (half & 1))) ++half; /* a carry is right */
  return (uint16_t)half;
}

/* bfloat16, round to nearest even; NaN stays NaN. */
static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

/* How this engine dumps the oracle's tap `t`. */
static Plan plan_for(const Tap *t, int engine_names) {
  Plan p;
  int layer = -1, used = 0;
  const char *tap = t->name, *rest = "";
  p.mode = ROWS, p.dtype = strcmp(t->dtype, "I32") == 0 ? MOE_TAP_I32 : MOE_TAP_F32;
  snprintf(p.name, sizeof p.name, "%s", tap);
  if (sscanf(tap, "model.layers.%d.%n", &layer, &used) == 1 && used > 0) rest = tap + used;
  if (!engine_names) {
    if (strcmp(tap, "model.norm.out") == 0) p.mode = WHOLE; /* the whole-tensor call, too */
    return p;
  }
  if (p.dtype == MOE_TAP_I32) {
    /* tokens and mlp.experts.idx: under the tap names, as int32 */
  } else if (strcmp(tap, "model.embed_tokens.out") == 0) {
    snprintf(p.name, sizeof p.name, "token_embd");
  } else if (strcmp(rest, "input_layernorm.out") == 0) {
    snprintf(p.name, sizeof p.name, "blk.%d.attn_norm", layer), p.dtype = MOE_TAP_F16;
  } else if (strcmp(rest, "mlp.out") == 0) {
    snprintf(p.name, sizeof p.name, "blk.%d.ffn_out", layer), p.dtype = MOE_TAP_BF16;
  } else if (strcmp(rest, "out") == 0) {
    p.dtype = MOE_TAP_F16;
  } else if (strcmp(tap, "model.norm.out") == 0) {
    p.mode = WHOLE;
  } else if (strcmp(tap, "logits") == 0) {
    p.mode = PER_TOKEN, snprintf(p.name, sizeof p.name, "t%%lld.result_output");
  } else {
    p.mode = SKIP; /* not every engine has every tap */
  }
  return p;
}

/* `rows` rows of the tap from row `row0`, perturbed where asked, converted to the plan's dtype. */
static void *rows_in_dtype(const Tap *t, const Plan *p, const Options *o, long long row0, long long rows) {
  const size_t n = (size_t)(rows * t->cols), esize = p->dtype == MOE_TAP_F16 || p->dtype == MOE_TAP_BF16 ? 2 : 4;
  unsigned char *out = (unsigned char *)malloc(n * esize + 1);
  size_t i;
  if (!out) return NULL;
  if (strcmp(t->dtype, "I32") == 0) {
    memcpy(out, (const int32_t *)t->data + row0 * t->cols, n * 4);
    return out;
  }
  for (i = 0; i < n; ++i) {
    float v = ((const float *)t->data)[(size_t)(row0 * t->cols) + i];
    const long long row = row0 + (long long)i / t->cols;
    uint16_t h;
    if (o->perturb_tap && strcmp(o->perturb_tap, t->name) == 0 && row == o->perturb_token) v *= 1.25f;
    if (p->dtype == MOE_TAP_F32) {
      memcpy(out + 4 * i, &v, 4);
      continue;
    }
    h = p->dtype == MOE_TAP_F16 ? f32_to_f16(v) : f32_to_bf16(v);
    memcpy(out + 2 * i, &h, 2);
  }
  return out;
}

/* One decode step: token t's row of every tap, in the manifest's (forward) order. */
static int decode_step(moe_tap_writer *w, const Tap *taps, int ntaps, long long t, const Options *o) {
  int k, rc = MOE_TAP_OK;
  for (k = 0; k < ntaps && rc == MOE_TAP_OK; ++k) {
    const Plan p = plan_for(&taps[k], o->engine_names);
    void *row;
    long long n = taps[k].cols;
    if (p.mode == SKIP || p.mode == WHOLE || t >= taps[k].rows) continue;
    if (!(row = rows_in_dtype(&taps[k], &p, o, t, 1))) return MOE_TAP_ERR_NOMEM;
    if (o->bad_row && t == 3 && strcmp(taps[k].name, "model.layers.1.out") == 0) --n; /* an engine bug */
    if (p.mode == ROWS) {
      rc = moe_tap_append_row(w, p.name, p.dtype, row, n);
    } else {
      char name[320];
      const int64_t shape[1] = {n};
      snprintf(name, sizeof name, p.name, t);
      rc = moe_tap_add(w, name, p.dtype, shape, 1, row);
    }
    free(row);
  }
  return rc;
}

static int load(const Options *o, Tap **out, int *count) {
  FILE *m = fopen(o->manifest, "r"), *d = fopen(o->dump, "rb");
  Tap *taps = NULL;
  int n = 0;
  long long off;
  if (!m || !d) {
    fprintf(stderr, "engine_demo: cannot open %s\n", !m ? o->manifest : o->dump);
    return 2;
  }
  for (;;) {
    Tap t;
    size_t bytes;
    if (fscanf(m, "%255s %7s %lld %lld %lld", t.name, t.dtype, &t.rows, &t.cols, &off) != 5) break;
    bytes = (size_t)(t.rows * t.cols) * 4; /* the oracle dumps F32 and I32 only */
    t.data = malloc(bytes + 1);
    taps = (Tap *)realloc(taps, (size_t)(n + 1) * sizeof *taps);
    if (!t.data || !taps || fseek(d, (long)off, SEEK_SET) != 0 || fread(t.data, 1, bytes, d) != bytes) {
      fprintf(stderr, "engine_demo: %s: cannot read tensor '%s' (%lld x %lld at %lld)\n", o->dump, t.name, t.rows,
              t.cols, off);
      return 2;
    }
    taps[n++] = t;
  }
  fclose(m), fclose(d);
  *out = taps, *count = n;
  return n > 0 ? 0 : 2;
}

static int parse_args(int argc, char **argv, Options *o) {
  int i;
  memset(o, 0, sizeof *o);
  if (argc < 4) return 2;
  o->manifest = argv[1], o->dump = argv[2], o->out = argv[3];
  for (i = 4; i < argc; ++i) {
    if (strcmp(argv[i], "--names") == 0 && i + 1 < argc) {
      o->engine_names = strcmp(argv[++i], "engine") == 0;
    } else if (strcmp(argv[i], "--perturb") == 0 && i + 1 < argc) {
      char *colon = strrchr(argv[++i], ':');
      if (!colon) return 2;
      *colon = '\0', o->perturb_tap = argv[i], o->perturb_token = atoll(colon + 1);
    } else if (strcmp(argv[i], "--bad-row") == 0) {
      o->bad_row = 1;
    } else if (strcmp(argv[i], "--abort-before-close") == 0) {
      o->abort_before_close = 1;
    } else {
      return 2;
    }
  }
  return 0;
}

/* The writer's calls in the order an engine makes them: open, metadata, the decode loop, the
 * taps it has whole at the end, close. */
static int run(const Options *o, const Tap *taps, int ntaps) {
  moe_tap_writer *w = moe_tap_writer_new();
  long long t, tokens = 0;
  int k, rc = moe_tap_open(w, o->out);
  for (k = 0; k < ntaps; ++k) tokens = taps[k].rows > tokens ? taps[k].rows : tokens;
  if (rc == MOE_TAP_OK) rc = moe_tap_set_meta(w, "backend", "engine_demo");
  if (rc == MOE_TAP_OK) rc = moe_tap_set_meta(w, "model", "tiny (moeoracle fixture)");
  if (rc == MOE_TAP_OK) rc = moe_tap_set_meta(w, "version", "0");
  for (k = 0; k < ntaps && rc == MOE_TAP_OK; ++k)
    if (strcmp(taps[k].name, "tokens") == 0) rc = moe_tap_set_tokens(w, (const int32_t *)taps[k].data, taps[k].rows);
  for (t = 0; t < tokens && rc == MOE_TAP_OK; ++t) rc = decode_step(w, taps, ntaps, t, o);
  for (k = 0; k < ntaps && rc == MOE_TAP_OK; ++k) {
    const Plan p = plan_for(&taps[k], o->engine_names);
    const int64_t shape[2] = {taps[k].rows, taps[k].cols};
    void *all;
    if (p.mode != WHOLE) continue;
    if (!(all = rows_in_dtype(&taps[k], &p, o, 0, taps[k].rows))) return 2;
    rc = moe_tap_add(w, p.name, p.dtype, shape, 2, all);
    free(all);
  }
  if (o->abort_before_close) abort(); /* a crash: the file must not appear */
  if (rc == MOE_TAP_OK) rc = moe_tap_close(w);
  else if (moe_tap_close(w) == MOE_TAP_OK) rc = -1; /* close must refuse after a failed call */
  if (rc != MOE_TAP_OK) fprintf(stderr, "engine_demo: error %d: %s\n", rc, rc < 0 ? "close wrote a file after an error" : moe_tap_error(w));
  else printf("engine_demo: wrote %s\n", o->out);
  moe_tap_writer_free(w);
  return rc == MOE_TAP_OK ? 0 : 1;
}

int main(int argc, char **argv) {
  Options o;
  Tap *taps = NULL;
  int ntaps = 0, rc, k;
  if (parse_args(argc, argv, &o) != 0) {
    fprintf(stderr, "usage: engine_demo MANIFEST DUMP OUT [--names oracle|engine] [--perturb TAP:TOKEN] "
                    "[--bad-row] [--abort-before-close]\n");
    return 2;
  }
  if ((rc = load(&o, &taps, &ntaps)) != 0) return rc;
  rc = run(&o, taps, ntaps);
  for (k = 0; k < ntaps; ++k) free(taps[k].data);
  free(taps);
  return rc;
}
