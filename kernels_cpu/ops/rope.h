// rope: placeholder until implemented
#pragma once
