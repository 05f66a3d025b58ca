kernels_cpu/CMakeFiles/kernels_cpu.dir/check/residual_add_check.cpp.o: \
 /work/main/kernels_cpu/check/residual_add_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/residual_add.h
