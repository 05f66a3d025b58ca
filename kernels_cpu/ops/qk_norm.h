// qk_norm: placeholder until implemented
#pragma once
