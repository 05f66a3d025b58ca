# Empty dependencies file for moeoracle.
# This may be replaced when dependencies are built.
