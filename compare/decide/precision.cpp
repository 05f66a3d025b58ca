#include "compare/decide/precision.h"

namespace moe::compare {

namespace {
Precision g_precision;  // set once at start, before any case is built (like the bound mode)
}  // namespace

const Precision& precision() { return g_precision; }
void set_precision(const Precision& p) { g_precision = p; }
Precision spec_precision() { return Precision{}; }

}  // namespace moe::compare
