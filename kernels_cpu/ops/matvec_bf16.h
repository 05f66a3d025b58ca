// matvec_bf16: placeholder until implemented
#pragma once
