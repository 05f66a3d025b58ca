kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/rope_ref.cpp.o: \
 /work/main/kernels_cpu/ops/rope_ref.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/rope.h
