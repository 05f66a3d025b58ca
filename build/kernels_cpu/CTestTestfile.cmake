# CMake generated Testfile for 
# Source directory: /work/main/kernels_cpu
# Build directory: /work/main/build/kernels_cpu
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
