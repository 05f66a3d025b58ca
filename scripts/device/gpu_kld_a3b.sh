#!/usr/bin/env bash
# Drift figures at a3b-2layers shapes (issue 37): the fixture is written on the GPU machine (1.5 GB,
# too large to carry), then a teacher-forced corpus (devbin/corpus.txt, token ids) runs through
# the bundled kernels in free mode in chunks (bisect --mode free --prefill C --chunk C, every op
# decided on its own inputs) with the truth run beside it, and through the fast tier; `drift` gives
# llama-perplexity's figures of each against the truth. Reports tarred into $OUT/kld.tar.xz.
# N: tokens of the corpus to use (default 2048); C: tokens per forward call (default 256);
# LIMIT: seconds for the GPU run (default 420).
set -u
. "$(dirname "$0")/unpack.sh"
w=$(mktemp -d)
n=${N:-2048}
c=${C:-256}
tr -s ' ,\n' '\n' < devbin/corpus.txt | head -n "$n" | paste -sd, > $w/corpus.txt
s=$(date +%s)
moeoracle fixture --preset a3b-2layers --out $w/a3b > $w/fixture.txt 2>&1
echo "fixture: rc $? in $(( $(date +%s) - s )) s"
s=$(date +%s)
timeout "${LIMIT:-420}" moeoracle bisect --model $w/a3b --tokens-file $w/corpus.txt --mode free --prefill "$c" \
  --chunk "$c" --dump $w/gpu.st --truth-dump $w/truth.st --json $w/bisect.json > $w/bisect.txt 2>&1
echo "bisect free, $n tokens in calls of $c: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $w/bisect.txt)"
if [ -f $w/truth.st ]; then
  moeoracle drift $w/truth.st $w/gpu.st > $w/kld-gpu.txt 2>&1
  echo "drift gpu: rc $?"; grep -E "Mean +KLD|Maximum KLD|99.9|Same top|RMS" $w/kld-gpu.txt
  s=$(date +%s)
  moeoracle run --model $w/a3b --tokens-file $w/corpus.txt --backend fast --dump $w/fast.st --taps logits,tokens \
    > $w/run-fast.txt 2>&1
  echo "run fast: rc $? in $(( $(date +%s) - s )) s"
  moeoracle drift $w/truth.st $w/fast.st > $w/kld-fast.txt 2>&1
  echo "drift fast: rc $?"; grep -E "Mean +KLD|Maximum KLD|99.9|Same top|RMS" $w/kld-fast.txt
fi
rm -rf $w/a3b $w/*.st
tar -C $w -cJf "$OUT/kld.tar.xz" .
