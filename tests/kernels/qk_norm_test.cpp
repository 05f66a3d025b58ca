#include "ops/qk_norm.h"
