# Empty dependencies file for kernels_cpu.
# This may be replaced when dependencies are built.
