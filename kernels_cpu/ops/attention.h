// attention: placeholder until implemented
#pragma once
