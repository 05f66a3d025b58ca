// swiglu_expert: placeholder until implemented
#pragma once
