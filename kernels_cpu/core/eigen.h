// Eigen's dense core for the fast tiers. GCC 12 reports a false -Wmaybe-uninitialized inside
// avx512fintrin.h (_mm512_undefined_ps) for Eigen's AVX-512 kernels; silenced for the headers only.
#pragma once
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
