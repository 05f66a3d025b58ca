# Empty dependencies file for rope_test.
# This may be replaced when dependencies are built.
