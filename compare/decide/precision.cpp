#include "compare/decide/precision.h"

#include <mutex>

namespace moe::compare {

namespace {
std::mutex g_mutex;
Precision g_precision;
}  // namespace

const Precision& precision() { return g_precision; }

void set_precision(const Precision& p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_precision = p;
}

Precision spec_precision() { return Precision{}; }

}  // namespace moe::compare
