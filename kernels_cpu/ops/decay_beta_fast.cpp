#include "ops/decay_beta.h"
