#include "ops/attention.h"
