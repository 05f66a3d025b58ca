kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/decay_beta_ref.cpp.o: \
 /work/main/kernels_cpu/ops/decay_beta_ref.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/decay_beta.h
