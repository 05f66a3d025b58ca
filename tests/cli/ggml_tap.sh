#!/usr/bin/env bash
# The llama.cpp eval callback (engines/llama-cpp/moeoracle_ggml_tap.h) driven as ggml's scheduler
# drives it (tests/tap_writer/ggml_tap_demo.c): its dump holds exactly the kept tensors, a prefill's
# rows then each decode step's, f32 and f16 as computed, and nothing of the tensors it must skip.
set -u
bin=$1
demo=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$(dirname "$0")/check_lib.sh"

check demo 0 "$demo" "$dir/cb.safetensors" "$dir/expect.safetensors"
expect_text demo "dumped 13 tensors, 25 rows"
check same 0 "$bin" diff "$dir/expect.safetensors" "$dir/cb.safetensors" --threshold 0
expect_text same "5 passed, 0 failed"
check inspect 0 "$bin" inspect "$dir/cb.safetensors"
expect_text inspect "l_out-1"
expect_text inspect "[5, 8]"
expect_no_text inspect "attn_norm"
expect_no_text inspect "q8"
expect_no_text inspect "view"
exit $fail
