kernels_cpu/CMakeFiles/kernels_cpu.dir/check/attention_check.cpp.o: \
 /work/main/kernels_cpu/check/attention_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/attention.h
