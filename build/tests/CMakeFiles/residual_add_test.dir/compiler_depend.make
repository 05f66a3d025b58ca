# Empty compiler generated dependencies file for residual_add_test.
# This may be replaced when dependencies are built.
