kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matmul_q_check.cpp.o: \
 /work/main/kernels_cpu/check/matmul_q_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/matmul_q.h
