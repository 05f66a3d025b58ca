kernels_cpu/CMakeFiles/kernels_cpu.dir/check/delta_net_check.cpp.o: \
 /work/main/kernels_cpu/check/delta_net_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/delta_net.h
