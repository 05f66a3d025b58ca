#!/usr/bin/env bash
# kl-base end to end: llama.cpp's KL-divergence base file from the truth of a tiny model, read back
# by an independent reader (tests/oracle/data/read_kld.py: the file's documented layout, numpy
# only) that checks every stored log-probability against the truth's dumps and scores a candidate
# (the same model with one expert per token) as llama-perplexity would; `moeoracle drift` on the
# same rows must give the exact KLD the reader's agrees with. Bad inputs exit 2 with the reason.
set -u
bin=$1 py=${2:-python3}  # an interpreter with numpy
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$(dirname "$0")/check_lib.sh"
reader="$(dirname "$0")/../oracle/data/read_kld.py"

check fixture 0 "$bin" fixture --preset tiny --format moeflux --seed 4 --out "$dir/m"
chunks=(5,9,300,17,2,44,8,100 7,7,123,456,33,2,1,90 250,3,14,15,92,65,35,89)
printf '%s\n' "${chunks[@]}" | tr ',' ' ' > "$dir/tokens.txt"
check kl_base 0 "$bin" kl-base --model "$dir/m" --tokens-file "$dir/tokens.txt" --ctx 8 --out "$dir/base.kld"
expect_text kl_base "3 chunks of 8 tokens"
truths=() cands=()
for k in 0 1 2; do
  check "truth_$k" 0 "$bin" run --model "$dir/m" --tokens "${chunks[$k]}" --backend ref64 --dump "$dir/t$k.st" --taps logits
  check "cand_$k" 0 "$bin" run --model "$dir/m" --tokens "${chunks[$k]}" --backend ref64 --experts-per-token 1 \
    --dump "$dir/c$k.st" --taps logits
  truths+=("$dir/t$k.st") cands+=("$dir/c$k.st")
done
check reader 0 "$py" "$reader" "$dir/base.kld" "$dir" "${truths[@]}" -- "${cands[@]}"
expect_text reader "reader KLD within the allowance"
expect_text reader "positions 9,"
cp "$dir/out.txt" "$dir/reader.out"
# Our drift on the same 9 rows: the exact mean the reader printed (6 significant digits).
check drift 0 "$bin" drift "$dir/truth.st" "$dir/cand.st"
cp "$dir/out.txt" "$dir/drift.out"
want=$(sed -n 's/.*exact \([^,]*\),.*/\1/p' "$dir/reader.out")
got=$(sed -n 's/^Mean    KLD: *\([^ ]*\) .*/\1/p' "$dir/drift.out")
"$py" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > 0 and abs(a - b) <= 1e-5 * a else 1)" \
  "$want" "$got" || { echo "FAIL: drift's mean KLD $got, the reader's exact $want"; fail=1; }
# Bad inputs.
check kl_base_short 2 "$bin" kl-base --model "$dir/m" --tokens 1,2,3 --ctx 8 --out "$dir/x.kld"
expect_text kl_base_short "3 tokens make no chunk of --ctx 8"
check kl_base_vocab 2 "$bin" kl-base --model "$dir/m" --tokens 1,2,3,999999 --ctx 2 --out "$dir/x.kld"
expect_text kl_base_vocab "token id 999999 at position 3 out of range"
test ! -e "$dir/x.kld" || { echo "FAIL: a refused run left $dir/x.kld"; fail=1; }
exit $fail
