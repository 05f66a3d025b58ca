/* moeoracle tap writer: an engine dumps its intermediate tensors ("taps") into a safetensors
 * file that `moeoracle diff` lines up against the oracle's own dump (docs/tap-writer.md).
 *
 * Single header, C99, no dependencies; also compiles as C++. In exactly one C or C++ file:
 *     #define MOEORACLE_TAP_WRITER_IMPLEMENTATION
 *     #include "moeoracle/tap_writer.h"
 * Every other file includes it without the define. The API is plain C types (int, int32_t,
 * int64_t, char pointers, one opaque struct), so Rust and other FFIs can call it directly.
 *
 * Use:
 *     moe_tap_writer *w = moe_tap_writer_new();
 *     moe_tap_open(w, "taps.safetensors");              // fails here if the directory is not writable
 *     moe_tap_set_meta(w, "backend", "my-engine");       // model, tokens, backend, version, ...
 *     for each token t, for each tap:
 *         moe_tap_append_row(w, "model.layers.3.out", MOE_TAP_F32, row, 4096);  // builds [T, 4096]
 *     moe_tap_add(w, "logits", MOE_TAP_F32, shape, 2, data);                    // or a whole tensor
 *     if (moe_tap_close(w) != MOE_TAP_OK) fprintf(stderr, "%s\n", moe_tap_error(w));
 *     moe_tap_writer_free(w);
 *
 * The file appears whole or not at all. Data goes to a spool file beside the target as it arrives
 * (on POSIX systems the spool is unlinked at once, so a crash leaves nothing behind); close writes
 * the safetensors file to a uniquely named temporary file in the target's directory, fsyncs it and
 * renames it over the target. Any failed call makes the writer failed: later calls return
 * MOE_TAP_ERR_FAILED, close writes nothing, and moe_tap_error() keeps the first error's message.
 * Freeing a writer that was not closed discards everything (no file).
 *
 * Memory is bounded and does not grow with the tensor data: every add/append copies the data to
 * the spool before it returns (the caller may reuse its buffer at once). The writer holds one
 * 64 KiB I/O buffer; per tap its name, shape and a 16-byte record per piece of data (one per
 * append call, merged when a tap's rows arrive back to back: at most 16 bytes per appended row,
 * 0.2 % of a row of 4096 f16 values); the metadata; and, during close, the JSON header (about
 * 100 bytes per tap). Disk: the spool holds the data once; during close the output holds it again.
 *
 * Values are written as the bytes given (safetensors is little-endian; open refuses a big-endian
 * host). No global state: one writer per file; a writer is not thread-safe (one thread at a time).
 */
#ifndef MOEORACLE_TAP_WRITER_H
#define MOEORACLE_TAP_WRITER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct moe_tap_writer moe_tap_writer;

/* Element types: the layout of the caller's data and the safetensors dtype written. */
enum {
  MOE_TAP_F32 = 0,  /* "F32": IEEE binary32 */
  MOE_TAP_F16 = 1,  /* "F16": IEEE binary16 */
  MOE_TAP_BF16 = 2, /* "BF16": the top 16 bits of a binary32 */
  MOE_TAP_I32 = 3   /* "I32": e.g. the routed expert indices (mlp.experts.idx) */
};

/* Status codes, returned by every function that can fail. */
enum {
  MOE_TAP_OK = 0,
  MOE_TAP_ERR_ARG = 1,      /* a bad argument: NULL, unknown dtype, bad name or shape */
  MOE_TAP_ERR_MISMATCH = 2, /* disagrees with the tap's earlier calls (row length, dtype), or a name added twice */
  MOE_TAP_ERR_IO = 3,       /* creating, writing, syncing or renaming a file failed */
  MOE_TAP_ERR_NOMEM = 4,    /* out of memory */
  MOE_TAP_ERR_STATE = 5,    /* called out of order: not opened, opened twice, or already closed */
  MOE_TAP_ERR_FAILED = 6    /* an earlier call failed; moe_tap_error() says why */
};

/* A new writer, not yet open; NULL only when out of memory. */
moe_tap_writer *moe_tap_writer_new(void);

/* Starts a file at `path` (written at close). Creates the spool beside it now, so an unwritable
 * or missing directory is an error here, not after the run. */
int moe_tap_open(moe_tap_writer *w, const char *path);

/* A __metadata__ entry (UTF-8 strings; setting a key again replaces its value). The oracle's
 * dumps carry model, tokens, backend, version, seed, start_pos and experts_per_token. Any time
 * before close. */
int moe_tap_set_meta(moe_tap_writer *w, const char *key, const char *value);

/* Sets "tokens" to the ids joined by commas ("5,9,300"), as the oracle writes it. */
int moe_tap_set_tokens(moe_tap_writer *w, const int32_t *ids, int64_t n);

/* A whole tensor: `ndim` dimensions (0..8) in `shape`, row-major, numel values of `dtype` at
 * `data` (which may be NULL when numel is 0). A name is added once. */
int moe_tap_add(moe_tap_writer *w, const char *name, int dtype, const int64_t *shape, int ndim,
                const void *data);

/* Appends `rows` rows of `n` values each to the tap `name` (a [rows_so_far, n] tensor in the
 * file). The first call fixes n and dtype; later calls must match them. A prefill appends T rows
 * at once, a decode loop one row per token. */
int moe_tap_append_rows(moe_tap_writer *w, const char *name, int dtype, const void *data,
                        int64_t rows, int64_t n);

/* moe_tap_append_rows with rows = 1. */
int moe_tap_append_row(moe_tap_writer *w, const char *name, int dtype, const void *row, int64_t n);

/* Writes the file: a temporary file in the target's directory, fsynced, renamed over `path`.
 * The writer stays allocated (for moe_tap_error) until moe_tap_writer_free. */
int moe_tap_close(moe_tap_writer *w);

/* The first error's message ("" when none): the file, the tap, what was expected and what was
 * found. Valid until the writer is freed. */
const char *moe_tap_error(const moe_tap_writer *w);

/* Frees the writer; if it was not closed successfully nothing is written. NULL is a no-op. */
void moe_tap_writer_free(moe_tap_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* MOEORACLE_TAP_WRITER_H */

/* ------------------------------------------------------------------------------------------ */
#if defined(MOEORACLE_TAP_WRITER_IMPLEMENTATION) && !defined(MOEORACLE_TAP_WRITER_IMPLEMENTED)
#define MOEORACLE_TAP_WRITER_IMPLEMENTED

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* POSIX (Linux, macOS, the BSDs): raw file descriptors, O_EXCL creation, fsync, an unlinked spool.
 * Elsewhere (or with MOEORACLE_TAP_WRITER_NO_POSIX defined) only C99 stdio: the spool is a
 * tmpfile(), no fsync, and a rename that cannot replace the target removes it first. Only
 * functions that strict C99 builds of glibc still declare are used here (no mkstemp, fdopen). */
#if !defined(MOEORACLE_TAP_WRITER_NO_POSIX) && (defined(__unix__) || defined(__unix) || defined(__APPLE__))
#define MOE_TAP__POSIX 1
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>
#else
#define MOE_TAP__POSIX 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MOE_TAP__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MOE_TAP__PRINTF(f, a)
#endif

/* Large enough that a system call per buffer costs nothing next to the copy, small enough to be
 * negligible beside any engine. */
#define MOE_TAP__BUFFER 65536
/* Room for a message naming the file, a tap and two values; longer ones are cut. */
#define MOE_TAP__ERRLEN 1024
/* safetensors sets no limit; 8 covers any activation (the oracle's taps are 2-d) and keeps a
 * tap's shape inline. */
#define MOE_TAP__MAX_DIMS 8
/* The oracle refuses headers above 100 MiB (oracle/safetensors.cpp, kMaxHeader). */
#define MOE_TAP__MAX_HEADER (100u << 20)
/* Names tried for a temporary file before giving up (each collision is another writer's file). */
#define MOE_TAP__NAME_TRIES 64

enum { MOE_TAP__NEW, MOE_TAP__OPEN, MOE_TAP__CLOSED, MOE_TAP__FAILED };

typedef struct {
#if MOE_TAP__POSIX
  int fd;
#else
  FILE *f;
#endif
} moe_tap__file;

typedef struct {
  uint64_t offset, bytes; /* in the spool */
} moe_tap__chunk;

typedef struct {
  char *name;
  int dtype, ndim;
  int by_rows; /* built by append_rows: shape[0] grows, shape[1] is fixed */
  int64_t shape[MOE_TAP__MAX_DIMS];
  moe_tap__chunk *chunks;
  size_t nchunks, cap;
  uint64_t bytes;
} moe_tap__tap;

typedef struct {
  char *p;
  size_t len, cap;
} moe_tap__str;

struct moe_tap_writer {
  int state;
  char *path;
  char err[MOE_TAP__ERRLEN];
  moe_tap__tap *taps;
  size_t ntaps, cap, hint; /* hint: where the next lookup starts (engines repeat one order) */
  char **meta;             /* key, value, key, value, ... */
  size_t nmeta, meta_cap;  /* in pairs */
  moe_tap__file spool;
  int spool_open;
  uint64_t spool_size;     /* bytes written, buffered ones included */
  unsigned char *buf;      /* MOE_TAP__BUFFER bytes: spool writes, then the copy at close */
  size_t buf_used;
  unsigned long salt;      /* varies the temporary names between tries */
};

/* ---- errors ---- */

static int moe_tap__fail(moe_tap_writer *w, int code, const char *fmt, ...) MOE_TAP__PRINTF(3, 4);
static int moe_tap__fail(moe_tap_writer *w, int code, const char *fmt, ...) {
  va_list ap;
  size_t n = 0;
  if (w->state == MOE_TAP__FAILED) return MOE_TAP_ERR_FAILED; /* keep the first message */
  if (w->path) n = (size_t)snprintf(w->err, sizeof w->err, "%s: ", w->path);
  if (n >= sizeof w->err) n = sizeof w->err - 1;
  va_start(ap, fmt);
  vsnprintf(w->err + n, sizeof w->err - n, fmt, ap);
  va_end(ap);
  w->state = MOE_TAP__FAILED;
  return code;
}

/* The common entry check: a writer in a state that accepts calls. */
static int moe_tap__usable(moe_tap_writer *w, const char *what) {
  if (!w) return MOE_TAP_ERR_ARG;
  if (w->state == MOE_TAP__FAILED) return MOE_TAP_ERR_FAILED;
  if (w->state == MOE_TAP__CLOSED) {
    snprintf(w->err, sizeof w->err, "%s: %s after moe_tap_close (the file is already written)",
             w->path ? w->path : "tap writer", what);
    return MOE_TAP_ERR_STATE;
  }
  return MOE_TAP_OK;
}

static const char *moe_tap__dtype_name(int dtype) {
  switch (dtype) {
    case MOE_TAP_F32: return "F32";
    case MOE_TAP_F16: return "F16";
    case MOE_TAP_BF16: return "BF16";
    case MOE_TAP_I32: return "I32";
    default: return "?";
  }
}

static uint64_t moe_tap__dtype_size(int dtype) {
  return (dtype == MOE_TAP_F16 || dtype == MOE_TAP_BF16) ? 2u : 4u;
}

static int moe_tap__valid_dtype(int dtype) {
  return dtype == MOE_TAP_F32 || dtype == MOE_TAP_F16 || dtype == MOE_TAP_BF16 || dtype == MOE_TAP_I32;
}

/* ---- strings ---- */

static char *moe_tap__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = (char *)malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF): the oracle's
 * JSON parser rejects a header that is not. */
static int moe_tap__utf8_ok(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  while (*s) {
    unsigned c = *s, need, cp, i;
    if (c < 0x80) { ++s; continue; }
    if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) need = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) need = 3, cp = c & 0x07;
    else return 0;
    for (i = 1; i <= need; ++i) {
      if ((s[i] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if ((need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return 0;
    s += need + 1;
  }
  return 1;
}

static int moe_tap__str_put(moe_tap__str *s, const char *p, size_t n) {
  if (s->len + n + 1 > s->cap) {
    size_t cap = s->cap ? s->cap : 256;
    char *q;
    while (cap < s->len + n + 1) cap *= 2;
    q = (char *)realloc(s->p, cap);
    if (!q) return -1;
    s->p = q, s->cap = cap;
  }
  memcpy(s->p + s->len, p, n);
  s->len += n;
  s->p[s->len] = '\0';
  return 0;
}

static int moe_tap__str_cat(moe_tap__str *s, const char *p) { return moe_tap__str_put(s, p, strlen(p)); }

/* A JSON string literal: quotes, backslashes and control characters escaped. */
static int moe_tap__str_json(moe_tap__str *s, const char *text) {
  const unsigned char *p = (const unsigned char *)text;
  int bad = moe_tap__str_put(s, "\"", 1);
  for (; *p && !bad; ++p) {
    char esc[8];
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\', esc[1] = (char)*p;
      bad = moe_tap__str_put(s, esc, 2);
    } else if (*p < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", (unsigned)*p);
      bad = moe_tap__str_put(s, esc, 6);
    } else {
      bad = moe_tap__str_put(s, (const char *)p, 1);
    }
  }
  return bad ? -1 : moe_tap__str_put(s, "\"", 1);
}

static int moe_tap__str_u64(moe_tap__str *s, uint64_t v) {
  char num[24];
  snprintf(num, sizeof num, "%llu", (unsigned long long)v);
  return moe_tap__str_cat(s, num);
}

/* ---- files: POSIX descriptors, or C99 stdio ---- */

/* A name for a temporary file beside `path`: "<path>.<tag>-<8 hex digits>". */
static char *moe_tap__temp_name(moe_tap_writer *w, const char *tag) {
  size_t n = strlen(w->path) + strlen(tag) + 16;
  char *name = (char *)malloc(n);
  unsigned long h = w->salt;
  if (!name) return NULL;
  h = h * 2654435761UL + (unsigned long)time(NULL);
  h = h * 2654435761UL + (unsigned long)clock();
  h = h * 2654435761UL + (unsigned long)(uintptr_t)w;
#if MOE_TAP__POSIX
  h = h * 2654435761UL + (unsigned long)getpid();
#endif
  w->salt = h + 1;
  snprintf(name, n, "%s.%s-%08lx", w->path, tag, (h ^ (h >> 29)) & 0xFFFFFFFFUL);
  return name;
}

/* Creates a new file beside the target under a name no other file has (O_EXCL on POSIX). On
 * success *name_out holds the name (the caller frees it); on failure errno says why. */
static int moe_tap__create(moe_tap_writer *w, const char *tag, moe_tap__file *f, char **name_out) {
  int attempt;
  for (attempt = 0; attempt < MOE_TAP__NAME_TRIES; ++attempt) {
    char *name = moe_tap__temp_name(w, tag);
    if (!name) { errno = ENOMEM; return -1; }
#if MOE_TAP__POSIX
    f->fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0666);
    if (f->fd >= 0) {
      fcntl(f->fd, F_SETFD, FD_CLOEXEC); /* not inherited by the engine's child processes */
      *name_out = name;
      return 0;
    }
#else
    {
      FILE *probe = fopen(name, "rb"); /* C99 has no exclusive create: skip names in use */
      if (probe) {
        fclose(probe);
        free(name);
        errno = EEXIST;
        continue;
      }
      f->f = fopen(name, "w+b");
      if (f->f) { *name_out = name; return 0; }
    }
#endif
    free(name);
    if (errno != EEXIST) return -1;
  }
  return -1;
}

static int moe_tap__write(moe_tap__file *f, const void *data, size_t n) {
  const unsigned char *p = (const unsigned char *)data;
#if MOE_TAP__POSIX
  while (n > 0) {
    ssize_t k = write(f->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) { if (k == 0) errno = EIO; return -1; }
    p += k, n -= (size_t)k;
  }
  return 0;
#else
  return fwrite(p, 1, n, f->f) == n ? 0 : -1;
#endif
}

/* Reads exactly n bytes at `offset`. */
static int moe_tap__read_at(moe_tap__file *f, uint64_t offset, void *data, size_t n) {
  unsigned char *p = (unsigned char *)data;
#if MOE_TAP__POSIX
  if ((uint64_t)(off_t)offset != offset || lseek(f->fd, (off_t)offset, SEEK_SET) < 0) return -1;
  while (n > 0) {
    ssize_t k = read(f->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) { if (k == 0) errno = EIO; return -1; }
    p += k, n -= (size_t)k;
  }
  return 0;
#else
  if (offset > (uint64_t)LONG_MAX) { errno = EFBIG; return -1; } /* fseek takes a long */
  if (fseek(f->f, (long)offset, SEEK_SET) != 0) return -1;
  return fread(p, 1, n, f->f) == n ? 0 : -1;
#endif
}

/* Flushes and (POSIX) fsyncs, then closes. */
static int moe_tap__sync_close(moe_tap__file *f) {
#if MOE_TAP__POSIX
  int e = 0;
  if (fsync(f->fd) != 0) e = errno;
  if (close(f->fd) != 0 && !e) e = errno;
  errno = e;
  return e ? -1 : 0;
#else
  int bad = fflush(f->f) != 0;
  bad |= fclose(f->f) != 0;
  return bad ? -1 : 0;
#endif
}

static void moe_tap__discard(moe_tap__file *f) {
#if MOE_TAP__POSIX
  close(f->fd);
#else
  fclose(f->f);
#endif
}

/* Renames tmp over path: atomic on POSIX. Elsewhere rename may refuse an existing target, which is
 * then removed first (a crash between the two leaves no file at path, never a partial one). */
static int moe_tap__replace(const char *tmp, const char *path) {
  if (rename(tmp, path) == 0) return 0;
#if !MOE_TAP__POSIX
  if (remove(path) == 0 && rename(tmp, path) == 0) return 0;
#endif
  return -1;
}

/* Makes the rename itself durable (POSIX: fsync the directory). Best effort: some file systems
 * cannot fsync a directory, and the file is complete either way. */
static void moe_tap__sync_dir(const char *path) {
#if MOE_TAP__POSIX
  const char *slash = strrchr(path, '/');
  char *dir;
  int fd;
  if (!slash) dir = moe_tap__strdup(".");
  else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    dir = (char *)malloc(n + 1);
    if (dir) memcpy(dir, path, n), dir[n] = '\0';
  }
  if (!dir) return;
  fd = open(dir, O_RDONLY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
#else
  (void)path;
#endif
}

/* ---- the spool ---- */

static int moe_tap__spool_open(moe_tap_writer *w) {
#if MOE_TAP__POSIX
  char *name = NULL;
  if (moe_tap__create(w, "spool", &w->spool, &name) != 0) return -1;
  unlink(name); /* the open descriptor keeps it; nothing is left on disk after any exit */
  free(name);
#else
  /* Probe the target's directory (an unwritable one fails now, as on POSIX), then spool to an
   * anonymous tmpfile() the C library deletes. */
  moe_tap__file probe;
  char *name = NULL;
  if (moe_tap__create(w, "tmp", &probe, &name) != 0) return -1;
  fclose(probe.f);
  remove(name);
  free(name);
  w->spool.f = tmpfile();
  if (!w->spool.f) return -1;
#endif
  w->spool_open = 1;
  return 0;
}

static int moe_tap__spool_flush(moe_tap_writer *w) {
  if (w->buf_used == 0) return 0;
  if (moe_tap__write(&w->spool, w->buf, w->buf_used) != 0) return -1;
  w->buf_used = 0;
  return 0;
}

/* Appends n bytes to the spool; small writes are gathered in the buffer. */
static int moe_tap__spool_put(moe_tap_writer *w, const void *data, uint64_t n) {
  if (n > (uint64_t)(size_t)-1) { errno = EFBIG; return -1; }
  if (w->buf_used + n <= MOE_TAP__BUFFER) {
    memcpy(w->buf + w->buf_used, data, (size_t)n);
    w->buf_used += (size_t)n;
  } else if (moe_tap__spool_flush(w) != 0 || moe_tap__write(&w->spool, data, (size_t)n) != 0) {
    return -1;
  }
  w->spool_size += n;
  return 0;
}

/* ---- taps ---- */

static moe_tap__tap *moe_tap__find(moe_tap_writer *w, const char *name) {
  size_t k;
  for (k = 0; k < w->ntaps; ++k) {
    size_t i = (w->hint + k) % w->ntaps;
    if (strcmp(w->taps[i].name, name) == 0) {
      w->hint = i + 1;
      return &w->taps[i];
    }
  }
  return NULL;
}

static int moe_tap__check_name(moe_tap_writer *w, const char *name, int dtype, const char *fn) {
  if (!name || !*name) return moe_tap__fail(w, MOE_TAP_ERR_ARG, "%s: the tap name is %s", fn, name ? "empty" : "NULL");
  if (!moe_tap__utf8_ok(name)) return moe_tap__fail(w, MOE_TAP_ERR_ARG, "%s: tap name '%s' is not valid UTF-8", fn, name);
  if (strcmp(name, "__metadata__") == 0)
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "%s: '__metadata__' is reserved by safetensors, not a tap name", fn);
  if (!moe_tap__valid_dtype(dtype))
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "%s: tap '%s': dtype %d, expected MOE_TAP_F32 (0), MOE_TAP_F16 (1), "
                         "MOE_TAP_BF16 (2) or MOE_TAP_I32 (3)", fn, name, dtype);
  if (w->state != MOE_TAP__OPEN)
    return moe_tap__fail(w, MOE_TAP_ERR_STATE, "%s: tap '%s': the writer is not open (call moe_tap_open first)", fn, name);
  return MOE_TAP_OK;
}

static moe_tap__tap *moe_tap__new_tap(moe_tap_writer *w, const char *name, int dtype) {
  moe_tap__tap *t;
  if (w->ntaps == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 64;
    moe_tap__tap *p = (moe_tap__tap *)realloc(w->taps, cap * sizeof *p);
    if (!p) return NULL;
    w->taps = p, w->cap = cap;
  }
  t = &w->taps[w->ntaps];
  memset(t, 0, sizeof *t);
  t->name = moe_tap__strdup(name);
  if (!t->name) return NULL;
  t->dtype = dtype;
  ++w->ntaps;
  return t;
}

/* Copies the tap's next `bytes` to the spool and records where they went. */
static int moe_tap__store(moe_tap_writer *w, moe_tap__tap *t, const void *data, uint64_t bytes) {
  const uint64_t at = w->spool_size;
  moe_tap__chunk *last = t->nchunks ? &t->chunks[t->nchunks - 1] : NULL;
  if (bytes == 0) return MOE_TAP_OK;
  if (moe_tap__spool_put(w, data, bytes) != 0)
    return moe_tap__fail(w, MOE_TAP_ERR_IO, "tap '%s': writing %llu bytes to the spool file failed: %s", t->name,
                         (unsigned long long)bytes, strerror(errno));
  if (last && last->offset + last->bytes == at) {
    last->bytes += bytes; /* the tap's rows arrived back to back: one piece */
  } else {
    if (t->nchunks == t->cap) {
      size_t cap = t->cap ? 2 * t->cap : 8;
      moe_tap__chunk *p = (moe_tap__chunk *)realloc(t->chunks, cap * sizeof *p);
      if (!p) return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "tap '%s': out of memory", t->name);
      t->chunks = p, t->cap = cap;
    }
    t->chunks[t->nchunks].offset = at;
    t->chunks[t->nchunks].bytes = bytes;
    ++t->nchunks;
  }
  t->bytes += bytes;
  return MOE_TAP_OK;
}

/* numel * element size, or -1 on overflow (a shape no file can hold). */
static int moe_tap__bytes(const int64_t *shape, int ndim, int dtype, uint64_t *out) {
  uint64_t n = moe_tap__dtype_size(dtype);
  int i;
  for (i = 0; i < ndim; ++i) {
    if (shape[i] != 0 && n > UINT64_MAX / (uint64_t)shape[i]) return -1;
    n *= (uint64_t)shape[i];
  }
  *out = n;
  return 0;
}

/* ---- the API ---- */

moe_tap_writer *moe_tap_writer_new(void) {
  moe_tap_writer *w = (moe_tap_writer *)calloc(1, sizeof *w);
  if (!w) return NULL;
  w->state = MOE_TAP__NEW;
  return w;
}

int moe_tap_open(moe_tap_writer *w, const char *path) {
  const uint16_t one = 1;
  int rc = moe_tap__usable(w, "moe_tap_open");
  if (rc != MOE_TAP_OK) return rc;
  if (w->state != MOE_TAP__NEW)
    return moe_tap__fail(w, MOE_TAP_ERR_STATE, "moe_tap_open: the writer is already open (one file per writer)");
  if (!path || !*path) return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_open: the path is %s", path ? "empty" : "NULL");
  if (*(const unsigned char *)&one != 1)
    return moe_tap__fail(w, MOE_TAP_ERR_STATE, "moe_tap_open: %s: this host is big-endian; safetensors data is "
                         "little-endian and the writer copies bytes as given", path);
  w->path = moe_tap__strdup(path);
  w->buf = (unsigned char *)malloc(MOE_TAP__BUFFER);
  if (!w->path || !w->buf) return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_open: out of memory");
  if (moe_tap__spool_open(w) != 0)
    return moe_tap__fail(w, MOE_TAP_ERR_IO, "cannot create a temporary file in its directory (expected a writable, "
                         "existing directory): %s", strerror(errno));
  w->state = MOE_TAP__OPEN;
  return MOE_TAP_OK;
}

int moe_tap_set_meta(moe_tap_writer *w, const char *key, const char *value) {
  size_t i;
  char *v;
  int rc = moe_tap__usable(w, "moe_tap_set_meta");
  if (rc != MOE_TAP_OK) return rc;
  if (!key || !*key || !value)
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_set_meta: %s", !key || !*key ? "empty or NULL key" : "NULL value");
  if (!moe_tap__utf8_ok(key) || !moe_tap__utf8_ok(value))
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_set_meta: metadata '%s': key and value must be valid UTF-8", key);
  v = moe_tap__strdup(value);
  if (!v) return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_set_meta: out of memory");
  for (i = 0; i < w->nmeta; ++i)
    if (strcmp(w->meta[2 * i], key) == 0) {
      free(w->meta[2 * i + 1]);
      w->meta[2 * i + 1] = v;
      return MOE_TAP_OK;
    }
  if (w->nmeta == w->meta_cap) {
    size_t cap = w->meta_cap ? 2 * w->meta_cap : 8;
    char **p = (char **)realloc(w->meta, 2 * cap * sizeof *p);
    if (!p) { free(v); return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_set_meta: out of memory"); }
    w->meta = p, w->meta_cap = cap;
  }
  w->meta[2 * w->nmeta] = moe_tap__strdup(key);
  w->meta[2 * w->nmeta + 1] = v;
  if (!w->meta[2 * w->nmeta]) { free(v); return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_set_meta: out of memory"); }
  ++w->nmeta;
  return MOE_TAP_OK;
}

int moe_tap_set_tokens(moe_tap_writer *w, const int32_t *ids, int64_t n) {
  moe_tap__str s = {NULL, 0, 0};
  int64_t i;
  int rc = moe_tap__usable(w, "moe_tap_set_tokens");
  if (rc != MOE_TAP_OK) return rc;
  if (n < 0 || (n > 0 && !ids))
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_set_tokens: %lld ids at %p", (long long)n, (const void *)ids);
  if (moe_tap__str_cat(&s, "") != 0) return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_set_tokens: out of memory");
  for (i = 0; i < n; ++i) {
    char num[16];
    snprintf(num, sizeof num, i ? ",%ld" : "%ld", (long)ids[i]);
    if (moe_tap__str_cat(&s, num) != 0) {
      free(s.p);
      return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_set_tokens: out of memory");
    }
  }
  rc = moe_tap_set_meta(w, "tokens", s.p);
  free(s.p);
  return rc;
}

int moe_tap_add(moe_tap_writer *w, const char *name, int dtype, const int64_t *shape, int ndim, const void *data) {
  moe_tap__tap *t;
  uint64_t bytes;
  int i, rc = moe_tap__usable(w, "moe_tap_add");
  if (rc != MOE_TAP_OK) return rc;
  if ((rc = moe_tap__check_name(w, name, dtype, "moe_tap_add")) != MOE_TAP_OK) return rc;
  if (ndim < 0 || ndim > MOE_TAP__MAX_DIMS || (ndim > 0 && !shape))
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_add: tap '%s': %d dimensions%s, expected 0 to %d", name, ndim,
                         ndim > 0 && !shape ? " and a NULL shape" : "", MOE_TAP__MAX_DIMS);
  for (i = 0; i < ndim; ++i)
    if (shape[i] < 0)
      return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_add: tap '%s': dimension %d is %lld, expected >= 0", name, i,
                           (long long)shape[i]);
  if (moe_tap__bytes(shape, ndim, dtype, &bytes) != 0)
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_add: tap '%s': the shape's size overflows 64 bits", name);
  if (bytes > 0 && !data) return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_add: tap '%s': data is NULL", name);
  if ((t = moe_tap__find(w, name)) != NULL)
    return moe_tap__fail(w, MOE_TAP_ERR_MISMATCH, "moe_tap_add: tap '%s' is already in the file (%s); a name is added "
                         "once, or built row by row with moe_tap_append_rows", name, t->by_rows ? "appended row by row" : "added whole");
  if (!(t = moe_tap__new_tap(w, name, dtype))) return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_add: out of memory");
  t->ndim = ndim;
  for (i = 0; i < ndim; ++i) t->shape[i] = shape[i];
  return moe_tap__store(w, t, data, bytes);
}

/* append_rows and append_row; `fn` names the one called in messages. */
static int moe_tap__append(moe_tap_writer *w, const char *fn, const char *name, int dtype, const void *data,
                           int64_t rows, int64_t n) {
  moe_tap__tap *t;
  uint64_t bytes;
  int64_t shape[2];
  int rc = moe_tap__usable(w, fn);
  if (rc != MOE_TAP_OK) return rc;
  if ((rc = moe_tap__check_name(w, name, dtype, fn)) != MOE_TAP_OK) return rc;
  shape[0] = rows, shape[1] = n;
  if (rows < 0 || n < 1 || moe_tap__bytes(shape, 2, dtype, &bytes) != 0)
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "%s: tap '%s': %lld rows of %lld values, expected rows "
                         ">= 0 and at least one value per row", fn, name, (long long)rows, (long long)n);
  if (bytes > 0 && !data) return moe_tap__fail(w, MOE_TAP_ERR_ARG, "%s: tap '%s': data is NULL", fn, name);
  t = moe_tap__find(w, name);
  if (t && !t->by_rows)
    return moe_tap__fail(w, MOE_TAP_ERR_MISMATCH, "%s: tap '%s' was added whole with moe_tap_add and "
                         "cannot grow", fn, name);
  if (t && t->shape[1] != n)
    return moe_tap__fail(w, MOE_TAP_ERR_MISMATCH, "%s: tap '%s': a row of %lld values, expected %lld "
                         "(the length of its rows so far)", fn, name, (long long)n, (long long)t->shape[1]);
  if (t && t->dtype != dtype)
    return moe_tap__fail(w, MOE_TAP_ERR_MISMATCH, "%s: tap '%s': dtype %s, expected %s (the dtype of "
                         "its rows so far)", fn, name, moe_tap__dtype_name(dtype), moe_tap__dtype_name(t->dtype));
  if (!t) {
    if (!(t = moe_tap__new_tap(w, name, dtype)))
      return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "%s: out of memory", fn);
    t->by_rows = 1, t->ndim = 2, t->shape[1] = n;
  }
  t->shape[0] += rows;
  return moe_tap__store(w, t, data, bytes);
}

int moe_tap_append_rows(moe_tap_writer *w, const char *name, int dtype, const void *data, int64_t rows, int64_t n) {
  return moe_tap__append(w, "moe_tap_append_rows", name, dtype, data, rows, n);
}

int moe_tap_append_row(moe_tap_writer *w, const char *name, int dtype, const void *row, int64_t n) {
  return moe_tap__append(w, "moe_tap_append_row", name, dtype, row, 1, n);
}

/* The safetensors header: {"__metadata__": {...}, name: {dtype, shape, data_offsets}, ...} in the
 * order the taps first arrived, padded with spaces to a multiple of 8 bytes as the oracle pads it
 * (the data then starts 8-byte aligned). */
static int moe_tap__header(moe_tap_writer *w, moe_tap__str *h) {
  uint64_t offset = 0;
  size_t i;
  int k, bad = moe_tap__str_cat(h, "{");
  if (w->nmeta) {
    bad |= moe_tap__str_cat(h, "\"__metadata__\":{");
    for (i = 0; i < w->nmeta; ++i) {
      bad |= moe_tap__str_cat(h, i ? "," : "");
      bad |= moe_tap__str_json(h, w->meta[2 * i]);
      bad |= moe_tap__str_cat(h, ":");
      bad |= moe_tap__str_json(h, w->meta[2 * i + 1]);
    }
    bad |= moe_tap__str_cat(h, "}");
  }
  for (i = 0; i < w->ntaps; ++i) {
    const moe_tap__tap *t = &w->taps[i];
    bad |= moe_tap__str_cat(h, i || w->nmeta ? "," : "");
    bad |= moe_tap__str_json(h, t->name);
    bad |= moe_tap__str_cat(h, ":{\"dtype\":\"");
    bad |= moe_tap__str_cat(h, moe_tap__dtype_name(t->dtype));
    bad |= moe_tap__str_cat(h, "\",\"shape\":[");
    for (k = 0; k < t->ndim; ++k) {
      bad |= moe_tap__str_cat(h, k ? "," : "");
      bad |= moe_tap__str_u64(h, (uint64_t)t->shape[k]);
    }
    bad |= moe_tap__str_cat(h, "],\"data_offsets\":[");
    bad |= moe_tap__str_u64(h, offset);
    bad |= moe_tap__str_cat(h, ",");
    bad |= moe_tap__str_u64(h, offset + t->bytes);
    bad |= moe_tap__str_cat(h, "]}");
    offset += t->bytes;
  }
  bad |= moe_tap__str_cat(h, "}");
  while (!bad && h->len % 8) bad |= moe_tap__str_cat(h, " ");
  if (bad) return moe_tap__fail(w, MOE_TAP_ERR_NOMEM, "moe_tap_close: out of memory building the header");
  if (h->len > MOE_TAP__MAX_HEADER)
    return moe_tap__fail(w, MOE_TAP_ERR_ARG, "moe_tap_close: the header is %llu bytes, more than the %u the oracle reads "
                         "(%llu tensors: fewer or shorter names)", (unsigned long long)h->len, MOE_TAP__MAX_HEADER,
                         (unsigned long long)w->ntaps);
  return MOE_TAP_OK;
}

/* Writes the header and every tap's pieces, in order, from the spool into `out`. */
static int moe_tap__copy_out(moe_tap_writer *w, moe_tap__file *out, const moe_tap__str *h, const char **what) {
  unsigned char len[8];
  size_t i, c;
  uint64_t v = h->len;
  for (i = 0; i < 8; ++i) len[i] = (unsigned char)(v >> (8 * i)); /* little-endian u64 */
  *what = "writing the header";
  if (moe_tap__write(out, len, 8) != 0 || moe_tap__write(out, h->p, h->len) != 0) return -1;
  for (i = 0; i < w->ntaps; ++i) {
    const moe_tap__tap *t = &w->taps[i];
    for (c = 0; c < t->nchunks; ++c) {
      uint64_t at = t->chunks[c].offset, left = t->chunks[c].bytes;
      while (left > 0) {
        size_t n = left < MOE_TAP__BUFFER ? (size_t)left : MOE_TAP__BUFFER;
        *what = "reading the spool";
        if (moe_tap__read_at(&w->spool, at, w->buf, n) != 0) return -1;
        *what = "writing the data";
        if (moe_tap__write(out, w->buf, n) != 0) return -1;
        at += n, left -= n;
      }
    }
  }
  return 0;
}

int moe_tap_close(moe_tap_writer *w) {
  moe_tap__str h = {NULL, 0, 0};
  moe_tap__file out;
  char *tmp = NULL;
  const char *what = "creating the temporary file";
  int rc = moe_tap__usable(w, "moe_tap_close");
  if (rc != MOE_TAP_OK) return rc;
  if (w->state != MOE_TAP__OPEN)
    return moe_tap__fail(w, MOE_TAP_ERR_STATE, "moe_tap_close: the writer was never opened (moe_tap_open)");
  if (moe_tap__spool_flush(w) != 0)
    return moe_tap__fail(w, MOE_TAP_ERR_IO, "moe_tap_close: writing the spool file failed: %s", strerror(errno));
  if ((rc = moe_tap__header(w, &h)) != MOE_TAP_OK) { free(h.p); return rc; }
  if (moe_tap__create(w, "tmp", &out, &tmp) != 0) {
    free(h.p);
    return moe_tap__fail(w, MOE_TAP_ERR_IO, "moe_tap_close: cannot create a temporary file in its directory: %s",
                         strerror(errno));
  }
  if (moe_tap__copy_out(w, &out, &h, &what) != 0) {
    const int e = errno;
    moe_tap__discard(&out);
    remove(tmp);
    rc = moe_tap__fail(w, MOE_TAP_ERR_IO, "moe_tap_close: %s of '%s' failed: %s", what, tmp, strerror(e));
  } else if (moe_tap__sync_close(&out) != 0) {
    const int e = errno;
    remove(tmp);
    rc = moe_tap__fail(w, MOE_TAP_ERR_IO, "moe_tap_close: flushing '%s' to disk failed: %s", tmp, strerror(e));
  } else if (moe_tap__replace(tmp, w->path) != 0) {
    const int e = errno;
    remove(tmp);
    rc = moe_tap__fail(w, MOE_TAP_ERR_IO, "moe_tap_close: renaming the finished '%s' onto it failed: %s", tmp, strerror(e));
  } else {
    moe_tap__sync_dir(w->path);
    w->state = MOE_TAP__CLOSED;
    rc = MOE_TAP_OK;
  }
  free(tmp);
  free(h.p);
  return rc;
}

const char *moe_tap_error(const moe_tap_writer *w) {
  return w ? w->err : "tap writer: the writer is NULL (moe_tap_writer_new returns NULL only when out of memory)";
}

void moe_tap_writer_free(moe_tap_writer *w) {
  size_t i;
  if (!w) return;
  if (w->spool_open) moe_tap__discard(&w->spool);
  for (i = 0; i < w->ntaps; ++i) {
    free(w->taps[i].name);
    free(w->taps[i].chunks);
  }
  for (i = 0; i < 2 * w->nmeta; ++i) free(w->meta[i]);
  free(w->meta);
  free(w->taps);
  free(w->buf);
  free(w->path);
  free(w);
}

#ifdef __cplusplus
}
#endif

#endif /* MOEORACLE_TAP_WRITER_IMPLEMENTATION */
