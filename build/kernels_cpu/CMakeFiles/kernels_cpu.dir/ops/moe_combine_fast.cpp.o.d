kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_combine_fast.cpp.o: \
 /work/main/kernels_cpu/ops/moe_combine_fast.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/moe_combine.h
