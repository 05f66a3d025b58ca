#include "ops/expert_buckets.h"
