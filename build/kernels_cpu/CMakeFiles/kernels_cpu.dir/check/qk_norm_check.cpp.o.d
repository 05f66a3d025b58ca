kernels_cpu/CMakeFiles/kernels_cpu.dir/check/qk_norm_check.cpp.o: \
 /work/main/kernels_cpu/check/qk_norm_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/qk_norm.h
