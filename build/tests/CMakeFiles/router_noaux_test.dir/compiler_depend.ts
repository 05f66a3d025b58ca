# CMAKE generated file: DO NOT EDIT!
# Timestamp file for compiler generated dependencies management for router_noaux_test.
