#include "bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

namespace moe::bench {

int64_t llc_bytes() {
  int best_level = -1;
  int64_t best = 32ll << 20;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lf(dir + "level"), sf(dir + "size");
    int level = 0;
    std::string size;
    if (!(lf >> level) || !(sf >> size) || size.empty()) continue;
    int64_t bytes = std::stoll(size);
    if (size.back() == 'K') bytes <<= 10;
    if (size.back() == 'M') bytes <<= 20;
    if (level > best_level) best_level = level, best = bytes;
  }
  return best;
}

double triad_gbs(int threads, int reps) {
  const int64_t n = (llc_bytes() * 3 / 2) / 4;  // floats per array: 1.5 x LLC bytes
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 1.0f), c(static_cast<size_t>(n), 2.0f);
  const float s = 3.0f;
  omp_set_num_threads(threads);
  auto triad = [&] {
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) a[size_t(k)] = b[size_t(k)] + s * c[size_t(k)];
  };
  triad();  // first touch (pages faulted in), threads started
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    triad();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(n) * 16 / sec / 1e9);
  }
  return best;
}

}  // namespace moe::bench
