#include "ops/argmax.h"
