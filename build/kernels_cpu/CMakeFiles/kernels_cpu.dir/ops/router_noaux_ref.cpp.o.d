kernels_cpu/CMakeFiles/kernels_cpu.dir/ops/router_noaux_ref.cpp.o: \
 /work/main/kernels_cpu/ops/router_noaux_ref.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/router_noaux.h
