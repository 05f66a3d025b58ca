kernels_cpu/CMakeFiles/kernels_cpu.dir/check/swiglu_expert_check.cpp.o: \
 /work/main/kernels_cpu/check/swiglu_expert_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/swiglu_expert.h
