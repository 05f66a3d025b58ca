kernels_cpu/CMakeFiles/kernels_cpu.dir/check/argmax_check.cpp.o: \
 /work/main/kernels_cpu/check/argmax_check.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/argmax.h
