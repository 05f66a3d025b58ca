#!/usr/bin/env bash
# Issue 13 on the GPU machine, from devbin/ (bin.tar.xz with moeoracle, lib/, kernels_ab/):
# kernels_ab/ holds what bench/kernels_ab/build.sh and tiles.sh write: the manifests and SPIR-V of
# the bundled kernels at other lets and of the A/B variants, which are compiled from
# records/kernels_ab/ where they lost their A/B (its README says what refuted each).
#   ab     the matvec_q kernels before and after in one process (bench/kernels_ab/ab.json), real
#          shapes, SEEDS seeds (default 2), batched --perf
#   table  every op's real shapes, one seed, --perf, JSON report (the docs' H100 table)
#   perf   the timing shapes (--shapes perf: large matvecs at every bit width and bf16, the
#          lm_heads, matmul_q at T = 2..512), one seed, --perf, JSON report
#   abperf the timing shapes of OPS (default matvec_q) on bench/kernels_ab/ab.json's kernels
#   tuneperf  the timing shapes of matvec_q on bench/kernels_ab/tune.json's matvec_q4 variants
#   tiles  matmul_q4 before / bundled / other tiles (kernels_ab/matmul_tune.json) and matvec_q4 at
#          other R, U, WG (kernels_ab/q4_tune.json) at the timing shapes (bench/kernels_ab/tiles.sh)
#   tuneq2q8  the same on tune_q2q8.json: the bundled matvec_q2 and matvec_q8 at R 4/8/16 x U 1/2/4
#          and four WG rules (bench/kernels_ab/tune.py)
#   q4pf   matvec_q4 and its next-step-prefetch variants (kernels_ab/q4pf.json) at the timing
#          shapes, --perf, one process; then remainder seeds 1..NSEEDS (default 300) of all of them
#   q4pg   matvec_q4 and its persistent-grid variants (kernels_ab/q4pg.json) at the timing shapes
#   flushab  the cold flush by fill and by read (MOE_PERF_FLUSH), one process each: the timing
#          shapes of matvec_q, matvec_bf16, matmul_q and the permute chain's real shapes; a table of
#          both side by side (flush_ab.py)
#   bf16tune  matvec_bf16 before / bundled / R, U, WG variants (kernels_ab/bf16tune.json) at the
#          timing shapes, --perf, one process; then remainder seeds 1..NSEEDS (default 1000) of all
#          of them (whichever rule is bundled keeps its record)
#   bf16seeds the bundled matvec_bf16 alone (kernels_ab/bf16.json): remainder seeds 1..1000 and
#          real seeds 1..100
#   q4xr   the bundled matvec_q4 and its x-in-registers persistent variants (kernels_ab/q4xr.json)
#   q4parts  diagnostics: matvec_q4 without its code arithmetic / its loads / ... / its loop / its
#          reductions (kernels_ab/q4parts.json, parts.py; wrong results by design, timed all the same)
#   q4lop  the bundled matvec_q4 (two logic operations a code) and the one-LOP form bundled before it;
#          the bundled matvec_q2 (one LOP) and its two-LOP form (matvec_q2_fact.comp)
#          (kernels_ab/q4lop.json: matvec_q4_lop.comp), timing shapes, one process
#   q4small  the bundled matvec_q4 and its SPIR-V at 32- and 64-lane workgroups (kernels_ab/q4small.json)
#   sxab   the bundled matvec_q{2,4,8} and their shared-x variants (kernels_ab/sx.json, records/kernels_ab/sx.py) at the
#          timing shapes, --perf, one process
#   stats  what the driver made of the bundled matvec_q / matvec_bf16 kernels at the timing shapes
#          (pipeline_stats: registers, spills; the spec constants their manifests give at subgroup 32)
#   ir     the same list, with the driver's internal representations (its assembly, where offered)
#          written to $OUT/ir/<kernel>_<label>/
#   tune   matvec_q4 variants (bench/kernels_ab/tune.json: R, U per kernel), real shapes, 1 seed
#   permab    the permute-fuse chain and its stages, bundled and variants
#          (bench/kernels_ab/permute_ab.json), real shapes (the A3B / A17B decode and prefill
#          batches; --shapes perf has none of this op), one seed, --perf
#   permfvec  the bundled chain and permute_gate_up against permute_gate_up_fvec (factored per quad)
#          and its chain (bench/kernels_ab/permute_fvec.json), real shapes, one seed, --perf
#   permtable  the bundled permute chains and their stages, real shapes, one seed, --perf
#   decseeds  permute_gate_up_decode and its chain (one token; kernels_ab/permute_decode.json):
#          remainder seeds 1..1000 and real seeds 1..100
#   fvecseeds  permute_gate_up_fvec and its chain (kernels_ab/permute_fvec_alone.json): remainder
#          seeds 1..1000 and real seeds 1..100
#   permdfact  the bundled chains and permute_down_scatter against permute_down_scatter_fact (factored
#          per quad) and the decode chain through it (bench/kernels_ab/permute_dfact.json), real
#          shapes, one seed, --perf
#   permlat  the bundled chains and permute_down_scatter against permute_down_scatter_lat (fewer memory
#          latencies in a row) and the decode chain through it (bench/kernels_ab/permute_lat.json), real
#          shapes, one seed, --perf
#   permtune  the permute stages' R / U variants (bench/kernels_ab/permute_tune.json), real shapes
#   permdectune  the decode chain's stages (the bundled permute_gate_up_decode and permute_down_scatter)
#          at other R / U / WG (bench/kernels_ab/permute_decode_tune.json, permute_decode_tune.py),
#          real shapes, one seed, --perf
#   permseeds the bundled permute stages alone (kernels_ab/permute.json): remainder seeds 1..1000
#   q2fact the bundled (factored) matvec_q2 and the per-term one (kernels_ab/q2ab.json) at the
#          timing shapes, --perf, one process; then the bundled one's remainder seeds 1..NSEEDS
#          (default 300; kernels_ab/q2.json)
#   q4fact the same for matvec_q4 (factored, bundled) and its per-term variant
#          (kernels_ab/q4ab.json; seeds of kernels_ab/q4.json)
#   lop    the bundled matvec_q8 and its one-LOP-a-code variant (kernels_ab/lop.json, records/kernels_ab/lop.py; matvec_q2
#          is bundled in that form): the driver's register counts and code sizes at the
#          timing shapes' spec points, then the timing shapes, --perf, one process
#   seedtrace  where a seed record's time goes on this machine: the bundled matvec_q8's remainder
#          seeds with MOE_TRACE_TIMES=1, one process alone (3 seeds), then 16 at once (3 seeds each)
#   q8tune, q4q2tune  the bundled matvec_q8 / matvec_q4 and q2 at other R / U / WG points
#          (kernels_ab/q8tune.json, q4q2tune.json), timing shapes, --perf, one process
#   q8fact the same for matvec_q8: the bundled kernel and factored variants (kernels_ab/q8ab.json;
#          seeds of kernels_ab/q8.json, the bundled one: NSEEDS=0 for the timing alone)
#   position  one process, matvec_q real shapes, 14 seeds (~300 cases), JSON for bench/perf_position.py
#   seeds  remainder seeds 1..1000 and real seeds 1..100 of OPS (default matvec_q), no isolation
#   q4seeds    the bundled matvec_q4 alone (kernels_ab/q4.json): remainder seeds 1..1000, real 1..100
#   q2seeds, q8seeds  the same for the bundled matvec_q2 / matvec_q8 (kernels_ab/q2.json, q8.json)
#   lvpseeds   the same remainder seeds on lavapipe on this machine's CPU (lvp.tar.xz: Debian 12's
#          Mesa 22.3.6 lavapipe and its libraries) at LP_NATIVE_VECTOR_WIDTH in LPW (default
#          "128 256 512": subgroup sizes 4, 8, 16), one lavapipe thread per process; the kernel
#          kernels_ab/q$LVPB.json (LVPB 2, 4 or 8; default 4; output lvpW, or lvpW_qLVPB when set)
# Usage: gpu_issue13.sh STEP...   (each step's output under $OUT)
cd "$(dirname "$0")"
[ -f bin.tar.xz ] && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$PWD/lib
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
out=${OUT:-/tmp}
clocks() { nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.mem --format=csv,noheader 2>&1; }
# matvec_q's timing shapes on kernels_ab/MANIFEST, one process; the summary and the lines matching
# FILTER (all when empty), cut to their cold and warm figures. Usage: matvec_ab NAME MANIFEST FILTER
matvec_ab() {
  ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
    --kernels "kernels_ab/$2" --json "$out/$1.json" > "$out/$1.txt" 2>&1
  grep -E "passed, .* failed|^FAIL|^device copy" "$out/$1.txt" | head -3
  grep -E "^  matvec_q" "$out/$1.txt" | grep -e "$3" |
    sed -E 's/GB.s \(/(/g; s/ +warm ([0-9.]+) ms[^s]*(stream [0-9.]+ ms [0-9.e+]+ \([0-9.]+% of copy)?.*/ warm \1 \2/' | cut -c1-230
}
# The bundled matvec kernels' spec constants at the timing shapes (subgroup 32, as their manifests
# give them): KERNEL LABEL ID=VALUE... (stats, ir, lop).
spec_points() {
  cat <<'LIST'
matvec_q4 in_proj_qkv 0=8 1=2 10=64
matvec_q4 o_proj 0=4 1=2 10=128
matvec_q4 lm_head 0=8 1=1 10=64
matvec_q4 R8_U1_WG128 0=8 1=1 10=128
matvec_q4 R4_U1_WG128 0=4 1=1 10=128
matvec_q8 in_proj_qkv 0=2 1=4 10=64
matvec_q8 o_proj 0=4 1=4 10=128
matvec_q8 A3B_lm_head 0=2 1=4 10=32
matvec_q8 A17B_lm_head 0=2 1=4 10=64
matvec_q2 in_proj_qkv 0=8 1=2 10=32
matvec_q2 o_proj 0=4 1=2 10=64
matvec_q2 lm_head 0=8 1=1 10=64
matvec_bf16 every 0=2 1=1 10=128
LIST
}
for step in "$@"; do
  t0=$(date +%s)
  echo "== $step ($(date -u +%H:%M:%S); $(clocks))"
  case $step in
    ab) ./moeoracle compare --ops matvec_q --shapes real --seeds "${SEEDS:-2}" --perf --kernels kernels_ab/ab.json \
          --json "$out/ab.json" > "$out/ab.txt" 2>&1
        grep -E "passed, .* failed" "$out/ab.txt"; sed -n '/^perf/,$p' "$out/ab.txt" ;;
    q4pf) ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/q4pf.json --json "$out/q4pf.json" > "$out/q4pf.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/q4pf.txt"; grep -E "^  matvec_q" "$out/q4pf.txt" | grep -E "4-bit" | \
          sed -E 's/GB.s \(/(/g; s/ +warm.*//' | cut -c1-170
        OUT=$out DEADLINE=${DEADLINE:-150} CHUNK=${CHUNK:-5} WORKERS=${WORKERS:-16} ./gpu_seeds.sh q4pfrem remainders \
          "${NSEEDS:-300}" --kernels kernels_ab/q4pf.json --ops matvec_q --no-isolate ;;
    q4pg) ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/q4pg.json --json "$out/q4pg.json" > "$out/q4pg.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/q4pg.txt"; grep -E "^  matvec_q" "$out/q4pg.txt" | grep -E "4-bit" | \
          sed -E 's/GB.s \(/(/g; s/ +warm.*//' | cut -c1-170 ;;
    bf16tune) ./moeoracle compare --ops matvec_bf16 --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/bf16tune.json --json "$out/bf16tune.json" > "$out/bf16tune.txt" 2>&1
        grep -E "passed, .* failed|^FAIL|^device copy" "$out/bf16tune.txt"; sed -n '/^perf/,$p' "$out/bf16tune.txt" | cut -c1-200
        OUT=$out DEADLINE=${DEADLINE:-200} CHUNK=${CHUNK:-25} WORKERS=${WORKERS:-16} ./gpu_seeds.sh bf16rem remainders \
          "${NSEEDS:-1000}" --kernels kernels_ab/bf16tune.json --ops matvec_bf16 --no-isolate ;;
    bf16seeds) for set in "remainders 1000" "real 100"; do
          OUT=$out DEADLINE=${DEADLINE:-200} CHUNK=${CHUNK:-10} WORKERS=${WORKERS:-16} ./gpu_seeds.sh bf16_${set%% *} $set \
            --kernels kernels_ab/bf16.json --ops matvec_bf16 --no-isolate
        done ;;
    q4xr) matvec_ab q4xr q4xr.json "4-bit" ;;
    q4parts) matvec_ab q4parts q4parts.json "4-bit" ;;
    q4lop) matvec_ab q4lop q4lop.json "" ;;
    q4small) matvec_ab q4small q4small.json "4-bit" ;;
    sxab) matvec_ab sxab sx.json "" ;;
    stats|ir) spec_points | while read -r spv label spec; do
          echo "-- $spv $label: $spec"
          ir=()
          [ "$step" = ir ] && { mkdir -p "$out/ir/${spv}_$label"; ir=(--ir "$out/ir/${spv}_$label"); }
          ./pipeline_stats "kernels_ab/$spv.spv" $(for kv in $spec; do printf -- '--spec %s ' "$kv"; done) "${ir[@]}" | grep -v "^device"
        done
        ;;
    flushab) for f in fill read; do
          MOE_PERF_FLUSH=$f ./moeoracle compare --ops matvec_q,matvec_bf16,matmul_q --shapes perf --seeds 1 --perf \
            --timeout-ms 60000 --no-isolate --json "$out/perf_$f.json" > "$out/perf_$f.txt" 2>&1
          MOE_PERF_FLUSH=$f ./moeoracle compare --ops moe_permute_fuse --shapes real --seeds 1 --perf --no-isolate \
            --json "$out/perm_$f.json" > "$out/perm_$f.txt" 2>&1
          grep -hE "passed, .* failed|^FAIL|^device copy" "$out/perf_$f.txt" "$out/perm_$f.txt"
        done
        python3 flush_ab.py "$out"/perf_fill.txt "$out"/perf_read.txt "$out"/perm_fill.txt "$out"/perm_read.txt ;;
    tune) ./moeoracle compare --ops matvec_q --shapes real --seeds 1 --perf --kernels kernels_ab/tune.json \
          --json "$out/tune.json" > "$out/tune.txt" 2>&1
        grep -E "passed, .* failed" "$out/tune.txt"; grep -E "^  matvec_q" "$out/tune.txt" | grep -E "16384x|12288x|4096x8192|8192x2048|1024x4096 4|2048x4096" | sed -E 's/\[A17B decode T 1 |\[A3B decode T 1 //; s/GB.s \(/(/g' | cut -c1-150 ;;
    position) ./moeoracle compare --ops matvec_q --shapes real --seeds 14 --perf --json "$out/position.json" > "$out/position.txt" 2>&1
        grep -E "passed, .* failed" "$out/position.txt"; python3 bench_perf_position.py "$out/position.json" | tail -4 ;;
    table) ./moeoracle compare --shapes real --seeds 1 --perf --no-isolate --json "$out/table.json" > "$out/table.txt" 2>&1
        grep -E "passed, .* failed" "$out/table.txt"; sed -n '/^perf/,$p' "$out/table.txt" | cut -c1-220 ;;
    perf) ./moeoracle compare --ops matvec_q,matvec_bf16,matmul_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --json "$out/perf.json" > "$out/perf.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/perf.txt"; sed -n '/^perf/,$p' "$out/perf.txt" | cut -c1-240 ;;
    abperf) ./moeoracle compare --ops "${OPS:-matvec_q}" --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/ab.json --json "$out/abperf.json" > "$out/abperf.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/abperf.txt"; sed -n '/^perf/,$p' "$out/abperf.txt" | cut -c1-240 ;;
    tiles) for m in matmul_tune:matmul_q q4_tune:matvec_q; do
          ./moeoracle compare --ops "${m#*:}" --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
            --kernels "kernels_ab/${m%%:*}.json" --json "$out/${m%%:*}.json" > "$out/${m%%:*}.txt" 2>&1
          grep -E "passed, .* failed|^FAIL" "$out/${m%%:*}.txt"; sed -n '/^perf/,$p' "$out/${m%%:*}.txt" | cut -c1-240
        done ;;
    tuneperf) ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/tune.json --json "$out/tuneperf.json" > "$out/tuneperf.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/tuneperf.txt"; sed -n '/^perf/,$p' "$out/tuneperf.txt" | cut -c1-240 ;;
    tuneq2q8) ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/tune_q2q8.json --json "$out/tuneq2q8.json" > "$out/tuneq2q8.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/tuneq2q8.txt"; sed -n '/^perf/,$p' "$out/tuneq2q8.txt" | cut -c1-240 ;;
    q2seeds|q4seeds|q8seeds) q=${step%seeds}
        # Chunks of 10: a chunk of 50 seeds of a matvec manifest outlived a 600 s device call
        # (records/device-runs.md, 2026-11-27 02:19; records/benchmarks-history.md, "Why the seed records
        # were slow").
        OUT=$out DEADLINE=${DEADLINE:-200} CHUNK=${CHUNK:-10} FIRST_SEED=${FIRST_SEED:-1} ./gpu_seeds.sh ${q}rem remainders "${NSEEDS:-1000}" --kernels kernels_ab/$q.json --no-isolate
        [ "${REAL:-1}" = 0 ] ||
        OUT=$out DEADLINE=${DEADLINE:-200} CHUNK=5 ./gpu_seeds.sh ${q}real real 100 --kernels kernels_ab/$q.json --no-isolate ;;
    lop) spec_points | grep -E '^matvec_q8 ' | while read -r k label spec; do
          for v in "$k" "${k}_lop"; do
            printf -- '-- %s %s (%s): ' "$v" "$label" "$spec"
            ./pipeline_stats "kernels_ab/$v.spv" $(for kv in $spec; do printf -- '--spec %s ' "$kv"; done) |
              grep -E "Register Count|Binary Size" | sed 's/ *(.*//' | tr -s ' \n' ' '; echo
          done
        done
        ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/lop.json --json "$out/lop.json" > "$out/lop.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/lop.txt"; sed -n '/^perf/,$p' "$out/lop.txt" | grep -- "-bit" | sed 's/ matvec_q  //; s/warm.*//' | cut -c1-150 ;;
    seedtrace) MOE_TRACE_TIMES=1 ./moeoracle compare --ops matvec_q --shapes remainders --seeds 3 --no-isolate \
          --kernels kernels_ab/q8.json > "$out/trace_alone.txt" 2>&1
        grep -E "passed, .* failed" "$out/trace_alone.txt"; grep "^trace" "$out/trace_alone.txt" | head -40
        for w in $(seq 1 16); do
          MOE_TRACE_TIMES=1 ./moeoracle compare --ops matvec_q --shapes remainders --seed $((100 * w)) --seeds 3 \
            --no-isolate --kernels kernels_ab/q8.json > "$out/trace_16_$w.txt" 2>&1 &
        done
        wait
        grep -h "^trace" "$out"/trace_16_*.txt | python3 -c '
import re, sys
tot = {}
for l in sys.stdin:
    m = re.search(r": ([0-9.]+) ms \((.*)\)$", l)
    if not m: continue
    kind = "build" if "building" in l else "case"
    tot.setdefault(kind, []).append(float(m.group(1)))
    for part in filter(None, m.group(2).split(", ")):
        n, v = part.rsplit(" ", 1)
        tot.setdefault(n, []).append(float(v))
for k, v in tot.items(): print(f"16 processes: {k}: {len(v)} x, sum {sum(v):.0f} ms, mean {sum(v)/len(v):.1f} ms")' ;;
    q8tune|q4q2tune) ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/$step.json --json "$out/$step.json" > "$out/$step.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/$step.txt"; sed -n '/^perf/,$p' "$out/$step.txt" | grep -- "-bit" | sed 's/ matvec_q  //; s/warm.*//' | cut -c1-150 ;;
    q2fact|q4fact|q8fact) b=${step:1:1}; m=q${b}ab; alone=q${b}.json
        ./moeoracle compare --ops matvec_q --shapes perf --seeds 1 --perf --timeout-ms 60000 --no-isolate \
          --kernels kernels_ab/$m.json --json "$out/$step.json" > "$out/$step.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/$step.txt"; sed -n '/^perf/,$p' "$out/$step.txt" | cut -c1-240
        OUT=$out DEADLINE=${DEADLINE:-150} CHUNK=${CHUNK:-25} WORKERS=${WORKERS:-8} ./gpu_seeds.sh ${step}rem remainders \
          "${NSEEDS:-300}" --kernels kernels_ab/$alone --ops matvec_q --no-isolate ;;
    permab|permtune|permfvec|permdfact|permdectune|permlat) m=permute_ab; ops=moe_permute_fuse,permute_gate_up,permute_down_scatter
        [ "$step" = permlat ] && m=permute_lat ops=moe_permute_fuse,permute_down_scatter
        [ "$step" = permdectune ] && m=permute_decode_tune ops=permute_gate_up,permute_down_scatter
        [ "$step" = permdfact ] && m=permute_dfact ops=moe_permute_fuse,permute_down_scatter
        [ "$step" = permtune ] && m=permute_tune ops=permute_gate_up,permute_down_scatter
        [ "$step" = permfvec ] && m=permute_fvec ops=moe_permute_fuse,permute_gate_up
        ./moeoracle compare --ops "$ops" --shapes real --seeds 1 --perf --no-isolate --kernels "kernels_ab/$m.json" \
          --json "$out/$step.json" > "$out/$step.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/$step.txt"; sed -n '/^perf/,$p' "$out/$step.txt" | cut -c1-240 ;;
    permtable) ./moeoracle compare --ops moe_permute_fuse,permute_gate_up,permute_down_scatter --shapes real --seeds 1 \
          --perf --no-isolate --json "$out/permtable.json" > "$out/permtable.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/permtable.txt"; sed -n '/^perf/,$p' "$out/permtable.txt" | cut -c1-300 ;;
    decseeds) for set in "remainders 1000" "real 100"; do
          OUT=$out DEADLINE=${DEADLINE:-150} CHUNK=${CHUNK:-10} ./gpu_seeds.sh "dec${set%% *}" $set \
            --kernels kernels_ab/permute_decode.json --ops permute_gate_up,moe_permute_fuse --no-isolate
        done ;;
    fvecseeds) for set in "remainders 1000" "real 100"; do
          OUT=$out DEADLINE=${DEADLINE:-150} CHUNK=${CHUNK:-10} ./gpu_seeds.sh "fvec${set%% *}" $set \
            --kernels kernels_ab/permute_fvec_alone.json --ops permute_gate_up,moe_permute_fuse --no-isolate
        done ;;
    permseeds) OUT=$out DEADLINE=${DEADLINE:-200} CHUNK=${CHUNK:-50} ./gpu_seeds.sh permrem remainders 1000 \
          --kernels kernels_ab/permute.json --ops moe_permute_fuse,permute_gate_up,permute_down_scatter --no-isolate ;;
    lvpseeds) [ -d lvp ] || { mkdir lvp && tar -C lvp -xJf lvp.tar.xz; }
        sed "s#LIBDIR#$PWD/lvp/lib#" lvp/icd/lvp.json > lvp/icd/lvp_abs.json
        for w in ${LPW:-128 256 512}; do
          LD_LIBRARY_PATH=$PWD/lib:$PWD/lvp/lib VK_DRIVER_FILES=$PWD/lvp/icd/lvp_abs.json LP_NUM_THREADS=1 \
            LP_NATIVE_VECTOR_WIDTH=$w OUT=$out DEADLINE=${DEADLINE:-150} CHUNK=${CHUNK:-20} WORKERS=${WORKERS:-16} \
            FIRST_SEED=${FIRST_SEED:-1} ./gpu_seeds.sh "lvp$w${LVPB:+_q$LVPB}" remainders "${NSEEDS:-1000}" --kernels kernels_ab/q${LVPB:-4}.json --device llvmpipe --no-isolate
        done ;;
    seeds) OUT=$out DEADLINE=${DEADLINE:-200} CHUNK=${CHUNK:-50} ./gpu_seeds.sh rem remainders 1000 --ops "${OPS:-matvec_q}" --no-isolate
        OUT=$out DEADLINE=${DEADLINE:-200} CHUNK=5 ./gpu_seeds.sh real real 100 --ops "${OPS:-matvec_q}" --no-isolate ;;
  esac
  echo "($step: $(( $(date +%s) - t0 )) s)"
done
