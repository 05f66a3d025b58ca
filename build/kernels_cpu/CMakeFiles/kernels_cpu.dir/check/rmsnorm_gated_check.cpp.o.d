kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rmsnorm_gated_check.cpp.o: \
 /work/main/kernels_cpu/check/rmsnorm_gated_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/rmsnorm_gated.h
