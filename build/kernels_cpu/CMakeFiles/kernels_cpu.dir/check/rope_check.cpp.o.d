kernels_cpu/CMakeFiles/kernels_cpu.dir/check/rope_check.cpp.o: \
 /work/main/kernels_cpu/check/rope_check.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/rope.h
