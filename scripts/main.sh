#!/usr/bin/env bash
# The main job: install what is needed, build, and run the CPU op self-check (every op's f32 tier
# and fast tier against the f64 truth at the real shapes of Qwen3.5-397B-A17B and Qwen3.6-35B-A3B).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DMOE_BUILD_TESTS=OFF -DMOE_BUILD_BENCH=OFF
./build/cli/moeoracle selfcheck "$@"
