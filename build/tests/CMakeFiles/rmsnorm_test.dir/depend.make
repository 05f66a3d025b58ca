# Empty dependencies file for rmsnorm_test.
# This may be replaced when dependencies are built.
