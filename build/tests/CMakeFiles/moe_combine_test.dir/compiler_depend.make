# Empty compiler generated dependencies file for moe_combine_test.
# This may be replaced when dependencies are built.
