kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/qk_norm_ref.cpp.o: \
 /work/main/kernels_cpu/ops/qk_norm_ref.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/qk_norm.h
