#include "ops/moe_permute_fuse.h"
