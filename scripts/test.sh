#!/usr/bin/env bash
# The test suite: install what is needed, build everything (tests and benchmarks), run CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/build.sh -DMOE_BUILD_TESTS=ON -DMOE_BUILD_BENCH=ON
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 900
