# Empty dependencies file for matvec_bf16_test.
# This may be replaced when dependencies are built.
