kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/residual_add_fast.cpp.o: \
 /work/main/kernels_cpu/ops/residual_add_fast.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/residual_add.h
