#include "ops/swiglu_expert.h"
