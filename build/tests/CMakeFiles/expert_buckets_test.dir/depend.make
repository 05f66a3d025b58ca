# Empty dependencies file for expert_buckets_test.
# This may be replaced when dependencies are built.
