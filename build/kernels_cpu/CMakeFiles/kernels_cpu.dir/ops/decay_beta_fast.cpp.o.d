kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/decay_beta_fast.cpp.o: \
 /work/main/kernels_cpu/ops/decay_beta_fast.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/decay_beta.h
