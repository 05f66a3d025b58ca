kernels_cpu/CMakeFiles/kernels_cpu.dir/check/decay_beta_check.cpp.o: \
 /work/main/kernels_cpu/check/decay_beta_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/decay_beta.h
