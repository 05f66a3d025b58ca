// rmsnorm_gated: placeholder until implemented
#pragma once
