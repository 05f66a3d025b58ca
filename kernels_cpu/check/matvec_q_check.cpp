#include "ops/matvec_q.h"
