kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/qk_norm_fast.cpp.o: \
 /work/main/kernels_cpu/ops/qk_norm_fast.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/qk_norm.h
