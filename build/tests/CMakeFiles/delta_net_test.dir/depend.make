# Empty dependencies file for delta_net_test.
# This may be replaced when dependencies are built.
