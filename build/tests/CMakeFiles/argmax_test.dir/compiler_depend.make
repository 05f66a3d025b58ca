# Empty compiler generated dependencies file for argmax_test.
# This may be replaced when dependencies are built.
