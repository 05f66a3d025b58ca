kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/argmax_fast.cpp.o: \
 /work/main/kernels_cpu/ops/argmax_fast.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/argmax.h
