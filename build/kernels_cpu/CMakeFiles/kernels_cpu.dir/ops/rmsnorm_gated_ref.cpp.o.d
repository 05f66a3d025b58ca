kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rmsnorm_gated_ref.cpp.o: \
 /work/main/kernels_cpu/ops/rmsnorm_gated_ref.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/rmsnorm_gated.h
