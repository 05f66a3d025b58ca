# Empty dependencies file for matmul_q_test.
# This may be replaced when dependencies are built.
