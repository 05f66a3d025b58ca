kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/swiglu_expert_fast.cpp.o: \
 /work/main/kernels_cpu/ops/swiglu_expert_fast.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/swiglu_expert.h
