kernels_cpu/CMakeFiles/kernels_cpu.dir/check/router_noaux_check.cpp.o: \
 /work/main/kernels_cpu/check/router_noaux_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/router_noaux.h
