// dequant: placeholder until implemented
#pragma once
