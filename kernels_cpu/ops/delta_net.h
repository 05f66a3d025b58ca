// delta_net: placeholder until implemented
#pragma once
