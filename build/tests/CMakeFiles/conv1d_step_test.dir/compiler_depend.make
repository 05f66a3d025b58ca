# Empty compiler generated dependencies file for conv1d_step_test.
# This may be replaced when dependencies are built.
