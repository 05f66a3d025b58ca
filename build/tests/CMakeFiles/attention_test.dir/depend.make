# Empty dependencies file for attention_test.
# This may be replaced when dependencies are built.
