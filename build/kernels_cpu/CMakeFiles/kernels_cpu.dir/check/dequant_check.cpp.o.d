kernels_cpu/CMakeFiles/kernels_cpu.dir/check/dequant_check.cpp.o: \
 /work/main/kernels_cpu/check/dequant_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/dequant.h
