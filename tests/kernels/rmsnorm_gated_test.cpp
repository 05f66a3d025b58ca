#include "ops/rmsnorm_gated.h"
