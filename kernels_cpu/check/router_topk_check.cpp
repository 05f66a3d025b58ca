#include "ops/router_topk.h"
