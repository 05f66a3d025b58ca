# Empty dependencies file for dequant_test.
# This may be replaced when dependencies are built.
