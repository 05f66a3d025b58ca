// embedding: placeholder until implemented
#pragma once
