kernels_cpu/CMakeFiles/kernels_cpu.dir/check/moe_combine_check.cpp.o: \
 /work/main/kernels_cpu/check/moe_combine_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/moe_combine.h
