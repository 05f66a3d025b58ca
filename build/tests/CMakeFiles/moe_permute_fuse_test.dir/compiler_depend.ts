# CMAKE generated file: DO NOT EDIT!
# Timestamp file for compiler generated dependencies management for moe_permute_fuse_test.
