# Empty compiler generated dependencies file for matvec_q_test.
# This may be replaced when dependencies are built.
