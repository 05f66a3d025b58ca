# Empty dependencies file for rmsnorm_gated_test.
# This may be replaced when dependencies are built.
