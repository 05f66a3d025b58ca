#include "ops/matvec_bf16.h"
