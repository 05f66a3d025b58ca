kernels_cpu/CMakeFiles/kernels_cpu.dir/check/conv1d_step_check.cpp.o: \
 /work/main/kernels_cpu/check/conv1d_step_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/conv1d_step.h
