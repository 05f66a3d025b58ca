kernels_cpu/CMakeFiles/kernels_cpu.dir/check/matvec_bf16_check.cpp.o: \
 /work/main/kernels_cpu/check/matvec_bf16_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/matvec_bf16.h
