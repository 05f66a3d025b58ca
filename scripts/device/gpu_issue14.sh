#!/usr/bin/env bash
# Issue 14 (DeepSeek-V3 / Cogito-V2) on the GPU machine, from devbin/ (bin.tar.xz as pack.sh packs it;
# run from the repository root's copy, whose fixtures/ travel with the working tree):
#   bisect_mf  bisect over the tiny DeepSeek-V3 loaded from moeflux's own converter output
#              (fixtures/moeflux/deepseek_v3_tiny_cogito), isolated and free modes
#   cogito     the DeepSeek-V3 ops' compare cases at the real Cogito shapes, one seed, --perf
# Usage: gpu_issue14.sh STEP...   (each step's output under $OUT)
cd "$(dirname "$0")"
[ -f bin.tar.xz ] && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$PWD/lib
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
out=${OUT:-/tmp}
fixture=../fixtures/moeflux/deepseek_v3_tiny_cogito
for step in "$@"; do
  t0=$(date +%s)
  echo "== $step ($(date -u +%H:%M:%S); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1))"
  case $step in
    bisect_mf) for mode in isolated free; do
          ./moeoracle bisect --model $fixture --tokens 1,17,42,300,7,99,5,250 --prefill 3 --mode $mode \
            > "$out/bisect_mf_$mode.txt" 2>&1
          echo "rc $? ($mode)"; tail -12 "$out/bisect_mf_$mode.txt"
        done ;;
    cogito) ./moeoracle compare --ops rope_yarn,mla_attention,matvec_bf16,router_noaux --shapes real --seeds 1 --perf \
          --no-isolate --json "$out/cogito.json" > "$out/cogito.txt" 2>&1
        grep -E "passed, .* failed|^FAIL" "$out/cogito.txt"; sed -n '/^perf/,$p' "$out/cogito.txt" | cut -c1-220 ;;
  esac
  echo "($step: $(( $(date +%s) - t0 )) s)"
done
