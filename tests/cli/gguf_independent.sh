#!/usr/bin/env bash
# GGUF models written by an independent writer (tests/oracle/data/mlx_to_gguf.py: numpy and the
# documented layouts, no code shared with oracle/gguf_convert.cpp) from the HF golden MLX models:
# they load and run to the MLX models' truth taps bit for bit (DeepSeek-V3 too, with mscale set as
# llama.cpp's deepseek2 holds it) (q4_1 and f32 hold every weight, and
# these models' A_log values survive llama.cpp's ssm_a = -exp(A_log) in f32), and our own writer's
# file of the synthetic model runs the same as the independent writer's file of that model.
set -u
bin=$1
py=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$(dirname "$0")/check_lib.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
toks=5,9,300,17,2,44,8,100

for m in qwen3_5_moe_tiny qwen3_next_tiny; do
  check "write_$m" 0 "$py" "$here/tests/oracle/data/mlx_to_gguf.py" "$here/fixtures/golden/$m" "$dir/$m.gguf"
  check "run_gguf_$m" 0 "$bin" run --model "$dir/$m.gguf" --tokens $toks --backend ref64 --dump "$dir/$m.gguf.st"
  check "run_mlx_$m" 0 "$bin" run --model "$here/fixtures/golden/$m" --tokens $toks --backend ref64 --dump "$dir/$m.mlx.st"
  check "same_taps_$m" 0 "$bin" diff "$dir/$m.mlx.st" "$dir/$m.gguf.st" --threshold 0
  expect_text "same_taps_$m" "65 passed, 0 failed"
done

# DeepSeek-V3 (deepseek2: the split k_b / v_b, the BF16 router): the golden model with mscale set to
# its mscale_all_dim, the one form llama.cpp's deepseek2 holds.
mkdir -p "$dir/ds"
cp "$here"/fixtures/golden/deepseek_v3_tiny/model* "$dir/ds/"
check ds_config 0 "$py" -c "import json,sys; c=json.load(open(sys.argv[1])); [r.__setitem__('mscale', r['mscale_all_dim']) for r in (c['rope_parameters'], c['rope_scaling'])]; json.dump(c, open(sys.argv[2], 'w'))" "$here/fixtures/golden/deepseek_v3_tiny/config.json" "$dir/ds/config.json"
check write_ds 0 "$py" "$here/tests/oracle/data/mlx_to_gguf.py" "$dir/ds" "$dir/ds.gguf"
check run_gguf_ds 0 "$bin" run --model "$dir/ds.gguf" --tokens $toks --backend ref64 --dump "$dir/ds.gguf.st"
check run_mlx_ds 0 "$bin" run --model "$dir/ds" --tokens $toks --backend ref64 --dump "$dir/ds.mlx.st"
check same_taps_ds 0 "$bin" diff "$dir/ds.mlx.st" "$dir/ds.gguf.st" --threshold 0
expect_text "same_taps_ds" " 0 failed"

# The synthetic fixture: ours (fixture --format gguf) and the independent writer's from its MLX form.
check fixture_mlx 0 "$bin" fixture --preset tiny --format mlx --seed 5 --out "$dir/tiny"
check fixture_gguf 0 "$bin" fixture --preset tiny --format gguf --seed 5 --out "$dir/ours.gguf"
check write_tiny 0 "$py" "$here/tests/oracle/data/mlx_to_gguf.py" "$dir/tiny" "$dir/theirs.gguf"
check run_ours 0 "$bin" run --model "$dir/ours.gguf" --tokens $toks --backend ref32 --dump "$dir/ours.st"
check run_theirs 0 "$bin" run --model "$dir/theirs.gguf" --tokens $toks --backend ref32 --dump "$dir/theirs.st"
check writers_agree 0 "$bin" diff "$dir/ours.st" "$dir/theirs.st" --threshold 0
exit $fail
