// moe_combine: placeholder until implemented
#pragma once
