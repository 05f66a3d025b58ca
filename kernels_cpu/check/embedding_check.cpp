#include "ops/embedding.h"
