# Empty compiler generated dependencies file for router_topk_test.
# This may be replaced when dependencies are built.
