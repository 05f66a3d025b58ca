// The tap writer compiled as C++17 (a C++ engine's build), and its API contract: status codes,
// sticky failures, nothing written after a failed call. Writes OUT.safetensors for the script
// (tests/cli/tap_writer.sh) to read back with `moeoracle inspect` and `diff`.
//   cxx_smoke OUT_DIR
#define MOEORACLE_TAP_WRITER_IMPLEMENTATION
#include "moeoracle/tap_writer.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char* what, const moe_tap_writer* w) {
  if (ok) return;
  std::fprintf(stderr, "cxx_smoke: FAIL %s (writer says: %s)\n", what, moe_tap_error(w));
  ++failures;
}

bool exists(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f) std::fclose(f);
  return f != nullptr;
}

// A prefill of 3 rows then 2 decode steps; a 3-d tensor; metadata needing JSON escapes.
void good_file(const std::string& dir) {
  const std::string path = dir + "/cxx.safetensors";
  moe_tap_writer* w = moe_tap_writer_new();
  expect(moe_tap_open(w, path.c_str()) == MOE_TAP_OK, "open", w);
  expect(moe_tap_set_meta(w, "backend", "cxx \"smoke\" \\ caf\xc3\xa9") == MOE_TAP_OK, "meta", w);
  const std::vector<int32_t> ids = {5, 9, 300, 17, -1};
  expect(moe_tap_set_tokens(w, ids.data(), int64_t(ids.size())) == MOE_TAP_OK, "tokens", w);
  std::vector<float> prefill(3 * 4);
  for (size_t i = 0; i < prefill.size(); ++i) prefill[i] = float(i);
  expect(moe_tap_append_rows(w, "model.layers.0.out", MOE_TAP_F32, prefill.data(), 3, 4) == MOE_TAP_OK, "prefill", w);
  for (int t = 3; t < 5; ++t) {
    const float row[4] = {float(4 * t), float(4 * t + 1), float(4 * t + 2), float(4 * t + 3)};
    expect(moe_tap_append_row(w, "model.layers.0.out", MOE_TAP_F32, row, 4) == MOE_TAP_OK, "decode row", w);
    const int32_t idx[2] = {t, t + 1};
    expect(moe_tap_append_row(w, "model.layers.0.mlp.experts.idx", MOE_TAP_I32, idx, 2) == MOE_TAP_OK, "idx row", w);
  }
  const int64_t shape[3] = {2, 3, 2};
  const std::vector<uint16_t> bf(12, 0x3F80);  // 1.0 in bf16
  expect(moe_tap_add(w, "cube", MOE_TAP_BF16, shape, 3, bf.data()) == MOE_TAP_OK, "add 3-d", w);
  expect(moe_tap_add(w, "scalar", MOE_TAP_F16, shape, 0, bf.data()) == MOE_TAP_OK, "add a scalar", w);
  expect(moe_tap_close(w) == MOE_TAP_OK, "close", w);
  expect(exists(path), "the file exists after close", w);
  expect(moe_tap_append_row(w, "late", MOE_TAP_F32, prefill.data(), 4) == MOE_TAP_ERR_STATE, "append after close", w);
  moe_tap_writer_free(w);
}

// Each bad call returns its code; every later call MOE_TAP_ERR_FAILED; close writes nothing.
void bad_calls(const std::string& dir) {
  const float row[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  moe_tap_writer* w = moe_tap_writer_new();
  expect(moe_tap_append_row(w, "x", MOE_TAP_F32, row, 4) == MOE_TAP_ERR_STATE, "append before open", w);
  expect(moe_tap_open(w, (dir + "/never.safetensors").c_str()) == MOE_TAP_ERR_FAILED, "sticky failure", w);
  moe_tap_writer_free(w);

  struct Case {
    const char* what;
    int want;
    int (*call)(moe_tap_writer*, const float*, const int64_t*);
  };
  const Case cases[] = {
      {"unknown dtype", MOE_TAP_ERR_ARG,
       [](moe_tap_writer* w, const float* r, const int64_t*) { return moe_tap_append_row(w, "x", 7, r, 4); }},
      {"reserved name", MOE_TAP_ERR_ARG,
       [](moe_tap_writer* w, const float* r, const int64_t* s) { return moe_tap_add(w, "__metadata__", MOE_TAP_F32, s, 1, r); }},
      {"invalid UTF-8", MOE_TAP_ERR_ARG,
       [](moe_tap_writer* w, const float* r, const int64_t* s) { return moe_tap_add(w, "bad\xff", MOE_TAP_F32, s, 1, r); }},
      {"name added twice", MOE_TAP_ERR_MISMATCH,
       [](moe_tap_writer* w, const float* r, const int64_t* s) { return moe_tap_add(w, "dup", MOE_TAP_F32, s, 1, r); }},
      {"dtype changes", MOE_TAP_ERR_MISMATCH,
       [](moe_tap_writer* w, const float* r, const int64_t*) { return moe_tap_append_row(w, "rows", MOE_TAP_F16, r, 4); }},
      {"append to a whole tensor", MOE_TAP_ERR_MISMATCH,
       [](moe_tap_writer* w, const float* r, const int64_t*) { return moe_tap_append_row(w, "dup", MOE_TAP_F32, r, 4); }},
  };
  for (const Case& c : cases) {
    const std::string path = dir + "/bad.safetensors";
    w = moe_tap_writer_new();
    expect(moe_tap_open(w, path.c_str()) == MOE_TAP_OK, "open", w);
    expect(moe_tap_add(w, "dup", MOE_TAP_F32, shape, 1, row) == MOE_TAP_OK, "add", w);
    expect(moe_tap_append_row(w, "rows", MOE_TAP_F32, row, 4) == MOE_TAP_OK, "append", w);
    expect(c.call(w, row, shape) == c.want, c.what, w);
    expect(std::string(moe_tap_error(w)).find(path) == 0, "the message starts with the file", w);
    expect(moe_tap_append_row(w, "rows", MOE_TAP_F32, row, 4) == MOE_TAP_ERR_FAILED, "a later call fails", w);
    expect(moe_tap_close(w) == MOE_TAP_ERR_FAILED, "close after a failure", w);
    expect(!exists(path), "no file after a failure", w);
    std::printf("%-26s -> %s\n", c.what, moe_tap_error(w));
    moe_tap_writer_free(w);
  }
  moe_tap_writer_free(nullptr);
  expect(moe_tap_open(nullptr, "x") == MOE_TAP_ERR_ARG, "NULL writer", nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cxx_smoke OUT_DIR\n");
    return 2;
  }
  good_file(argv[1]);
  bad_calls(argv[1]);
  if (failures == 0) std::printf("cxx_smoke: all passed\n");
  return failures ? 1 : 0;
}
