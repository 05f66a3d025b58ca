kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/embedding_ref.cpp.o: \
 /work/main/kernels_cpu/ops/embedding_ref.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/embedding.h
