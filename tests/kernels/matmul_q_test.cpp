#include "ops/matmul_q.h"
