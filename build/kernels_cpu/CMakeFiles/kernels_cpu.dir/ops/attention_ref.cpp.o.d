kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/attention_ref.cpp.o: \
 /work/main/kernels_cpu/ops/attention_ref.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/attention.h
