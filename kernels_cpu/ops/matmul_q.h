// matmul_q: placeholder until implemented
#pragma once
