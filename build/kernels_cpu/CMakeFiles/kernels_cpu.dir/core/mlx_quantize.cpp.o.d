kernels_cpu/CMakeFiles/kernels_cpu.dir/core/mlx_quantize.cpp.o: \
 /work/main/kernels_cpu/core/mlx_quantize.cpp /usr/include/stdc-predef.h
