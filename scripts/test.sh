#!/usr/bin/env bash
# The test suite: install what is needed, build everything (tests and benchmarks), run CTest;
# then the quick fuzz set (the file formats that need no model, clang + ASan + UBSan, 20 s each:
# docs/fuzzing.md; the long runs and every other harness are recorded evidence, not CI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/build.sh -DMOE_BUILD_TESTS=ON -DMOE_BUILD_BENCH=ON
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 900
cd ..
bash scripts/fuzz.sh --quick 20
