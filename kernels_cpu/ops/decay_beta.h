// decay_beta: placeholder until implemented
#pragma once
