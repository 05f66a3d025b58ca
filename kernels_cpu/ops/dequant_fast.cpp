#include "ops/dequant.h"
