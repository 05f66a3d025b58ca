// residual_add: placeholder until implemented
#pragma once
