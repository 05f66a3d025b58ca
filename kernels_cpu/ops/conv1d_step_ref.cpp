#include "ops/conv1d_step.h"
