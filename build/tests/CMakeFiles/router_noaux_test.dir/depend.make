# Empty dependencies file for router_noaux_test.
# This may be replaced when dependencies are built.
