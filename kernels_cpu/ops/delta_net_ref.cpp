#include "ops/delta_net.h"
