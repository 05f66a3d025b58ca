kernels_cpu/CMakeFiles/kernels_cpu.dir/check/embedding_check.cpp.o: \
 /work/main/kernels_cpu/check/embedding_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/embedding.h
