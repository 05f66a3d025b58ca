kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/moe_combine_ref.cpp.o: \
 /work/main/kernels_cpu/ops/moe_combine_ref.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/moe_combine.h
