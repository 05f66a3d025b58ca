kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/dequant_fast.cpp.o: \
 /work/main/kernels_cpu/ops/dequant_fast.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/dequant.h
