#!/usr/bin/env bash
# The shipped engine manifests (engines/) on the GPU machine: ggml's Vulkan shaders and
# flash-moe-vulkan's, each from the checkout carried in devbin/ (devbin/ggml: ggml's
# src/ggml-vulkan/vulkan-shaders; devbin/fmv: flash-moe-vulkan's vulkan_infer/shaders — the
# engines' own files, never committed here). Seeds FIRST.. FIRST+SEEDS-1 (default 1, 3) of the
# SHAPES (default all) of each engine in ENGINES (default both), in chunks of CHUNK seeds (one
# compare run each, so a run cut short by the call's limit still leaves whole chunks); then
# `mutate` of the kernels named in MUTATE (default none; "all": every kernel) of MUTATE_ENGINE
# (default ggml-vulkan:ggml), one seed of MSHAPES (default remainders), with the engine's
# equivalence claims (engines/<engine>/equivalent.json) where it has them.
# Binaries as for gpu_issue10.sh (devbin/bin.tar.xz). Writes $OUT/engines-*.{txt,json}.
set -u
. "$(dirname "$0")/unpack.sh"
first=${FIRST:-1} seeds=${SEEDS:-3} chunk=${CHUNK:-1000}
for e in ${ENGINES:-ggml-vulkan:ggml flash-moe-vulkan:fmv}; do
  m=${e%%:*} src=${e##*:}
  for ((a = first; a < first + seeds; a += chunk)); do
    n=$(( first + seeds - a < chunk ? first + seeds - a : chunk ))
    s=$(date +%s) tag=$m-${SHAPES:-all}-s$a-n$n
    moeoracle compare --kernels engines/$m/$m.json --kernels-root devbin/$src --shapes ${SHAPES:-all} \
      --seed $a --seeds $n --json $OUT/engines-$tag.json > $OUT/engines-$tag.txt 2>&1
    echo "$tag: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/engines-$tag.txt)"
  done
done
if [ -n "${MUTATE:-}" ]; then
  e=${MUTATE_ENGINE:-ggml-vulkan:ggml} m=${e%%:*} src=${e##*:} s=$(date +%s)
  only=(--kernel "$MUTATE"); [ "$MUTATE" = all ] && only=()
  [ -f engines/$m/equivalent.json ] && only+=(--equivalent engines/$m/equivalent.json)
  timeout ${LIMIT:-300} moeoracle mutate --kernels engines/$m/$m.json --kernels-root devbin/$src \
    "${only[@]}" --shapes ${MSHAPES:-remainders} --seeds 1 --jobs ${JOBS:-15} --timeout-ms 10000 \
    --json $OUT/mutate-$m.json > $OUT/mutate-$m.txt 2> $OUT/mutate-$m.err
  echo "mutate $m: rc $? in $(( $(date +%s) - s )) s: $(tail -1 $OUT/mutate-$m.txt)"
fi
