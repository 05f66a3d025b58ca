kernels_cpu/CMakeFiles/kernels_cpu.dir/check/router_topk_check.cpp.o: \
 /work/main/kernels_cpu/check/router_topk_check.cpp \
 /usr/include/stdc-predef.h /work/main/kernels_cpu/ops/router_topk.h
