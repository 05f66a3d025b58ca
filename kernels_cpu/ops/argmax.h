// argmax: placeholder until implemented
#pragma once
