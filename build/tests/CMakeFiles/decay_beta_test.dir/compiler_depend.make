# Empty compiler generated dependencies file for decay_beta_test.
# This may be replaced when dependencies are built.
