#include "ops/residual_add.h"
