# Empty dependencies file for qk_norm_test.
# This may be replaced when dependencies are built.
