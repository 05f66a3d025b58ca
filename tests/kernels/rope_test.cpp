#include "ops/rope.h"
