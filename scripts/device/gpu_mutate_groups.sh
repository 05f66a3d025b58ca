#!/usr/bin/env bash
# `mutate` of the shipped engine manifests on the GPU machine, kernel group after kernel group (one
# process each, so a group cut short by LIMIT still writes its JSON with the mutants it judged).
# Not at once: on NVIDIA 580 a mutant that loses the device makes every process see it lost, so
# twelve groups at once re-ran most mutants alone and were 5-10x slower (2026-12-06). Each argument is
# ENGINE:SRC:KERNELS (engine as in engines/, SRC its checkout in devbin/, KERNELS comma-separated;
# keep the kernels of one source file in one group, since a file's mutants are judged by the
# kernels selected with it). One seed of MSHAPES (default remainders), JOBS mutants at once per
# group (default 2), dispatch timeout TMO ms (default 5000), LIMIT seconds per group (default 500),
# the engine's equivalence claims applied. Binaries as for gpu_engines.sh. Writes
# $OUT/mutate-groups.tar.xz (mutate-<engine>-<n>.{json,txt,err}: a call brings back 8 files at most).
set -u
. "$(dirname "$0")/unpack.sh"
res=$(mktemp -d)
n=0
for g in "$@"; do
  n=$((n + 1)); m=${g%%:*} rest=${g#*:}; src=${rest%%:*} ks=${rest#*:}
  claims=(); [ -f engines/$m/equivalent.json ] && claims=(--equivalent engines/$m/equivalent.json)
  ( s=$(date +%s)
    timeout ${LIMIT:-500} moeoracle mutate --kernels engines/$m/$m.json --kernels-root devbin/$src \
      --kernel "$ks" "${claims[@]}" --shapes ${MSHAPES:-remainders} --seeds 1 --jobs ${JOBS:-2} \
      --timeout-ms ${TMO:-5000} --json $res/mutate-$m-$n.json > $res/mutate-$m-$n.txt 2> $res/mutate-$m-$n.err
    echo "group $n ($m: $ks): rc $? in $(( $(date +%s) - s )) s: $(tail -1 $res/mutate-$m-$n.txt)" )
  tar -C "$res" -cJf $OUT/mutate-groups.tar.xz .  # after each group: a call's limit loses none
done
