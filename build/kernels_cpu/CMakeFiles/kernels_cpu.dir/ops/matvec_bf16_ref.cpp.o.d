kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/matvec_bf16_ref.cpp.o: \
 /work/main/kernels_cpu/ops/matvec_bf16_ref.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/matvec_bf16.h
