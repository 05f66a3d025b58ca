kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/conv1d_step_fast.cpp.o: \
 /work/main/kernels_cpu/ops/conv1d_step_fast.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/conv1d_step.h
