#!/usr/bin/env bash
# Configures and builds into ./build (Release). Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
# Two compile jobs: each g++ on the Eigen/GoogleTest files stays well under 2 GiB, so this is safe on
# the 2-core 24 GiB CI machine; more jobs than cores would only thrash.
jobs=${MOE_JOBS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$jobs"
