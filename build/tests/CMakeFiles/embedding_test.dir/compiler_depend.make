# Empty compiler generated dependencies file for embedding_test.
# This may be replaced when dependencies are built.
