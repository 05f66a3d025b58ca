# Empty compiler generated dependencies file for swiglu_expert_test.
# This may be replaced when dependencies are built.
