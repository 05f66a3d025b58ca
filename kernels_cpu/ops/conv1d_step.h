// conv1d_step: placeholder until implemented
#pragma once
