// router_noaux: placeholder until implemented
#pragma once
