/* ggml-backend.h's tensor read-back, for the stub (ggml.h beside this file). */
#ifndef MOE_GGML_BACKEND_STUB_H
#define MOE_GGML_BACKEND_STUB_H
#include "ggml.h"
void ggml_backend_tensor_get(const struct ggml_tensor *t, void *data, size_t offset, size_t size);
#endif
