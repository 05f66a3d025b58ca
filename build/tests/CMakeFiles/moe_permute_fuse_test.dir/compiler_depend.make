# Empty compiler generated dependencies file for moe_permute_fuse_test.
# This may be replaced when dependencies are built.
