kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matmul_q_ref.cpp.o: \
 /work/main/kernels_cpu/ops/matmul_q_ref.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/matmul_q.h
