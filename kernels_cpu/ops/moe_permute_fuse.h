// moe_permute_fuse: placeholder until implemented
#pragma once
