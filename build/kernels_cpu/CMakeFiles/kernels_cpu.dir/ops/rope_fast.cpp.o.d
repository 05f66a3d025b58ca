kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rope_fast.cpp.o: \
 /work/main/kernels_cpu/ops/rope_fast.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/rope.h
