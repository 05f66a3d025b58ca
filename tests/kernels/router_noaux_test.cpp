#include "ops/router_noaux.h"
