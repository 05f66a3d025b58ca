#include "ops/moe_combine.h"
