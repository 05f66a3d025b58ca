// router_topk: placeholder until implemented
#pragma once
