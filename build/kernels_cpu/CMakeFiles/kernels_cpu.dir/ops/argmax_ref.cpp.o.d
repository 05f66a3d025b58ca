kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/argmax_ref.cpp.o: \
 /work/main/kernels_cpu/ops/argmax_ref.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/argmax.h
