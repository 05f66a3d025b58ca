/* The few declarations of ggml's ggml.h that engines/llama-cpp/moeoracle_ggml_tap.h uses, written
 * for its test (ggml_tap_demo.c): same names and meanings (ggml's public API), a reduced tensor
 * struct. The callback compiles unchanged against the real header (engines/llama-cpp/README.md). */
#ifndef MOE_GGML_STUB_H
#define MOE_GGML_STUB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ggml_type { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q8_0 = 8, GGML_TYPE_I32 = 26, GGML_TYPE_BF16 = 30 };

struct ggml_tensor {
  enum ggml_type type;
  int64_t ne[4]; /* elements per dimension, ne[0] innermost */
  size_t nb[4];  /* strides in bytes */
  void *data;
  char name[64];
};

size_t ggml_nbytes(const struct ggml_tensor *t);
int64_t ggml_nrows(const struct ggml_tensor *t);
bool ggml_is_contiguous(const struct ggml_tensor *t);
#endif
