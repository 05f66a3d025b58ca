kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/delta_net_fast.cpp.o: \
 /work/main/kernels_cpu/ops/delta_net_fast.cpp /usr/include/stdc-predef.h \
 /work/main/kernels_cpu/ops/delta_net.h
