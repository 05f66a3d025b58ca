# Empty dependencies file for kernels_registry.
# This may be replaced when dependencies are built.
