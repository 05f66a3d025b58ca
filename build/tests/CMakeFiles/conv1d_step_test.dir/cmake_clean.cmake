file(REMOVE_RECURSE
  "CMakeFiles/conv1d_step_test.dir/kernels/conv1d_step_test.cpp.o"
  "CMakeFiles/conv1d_step_test.dir/kernels/conv1d_step_test.cpp.o.d"
  "conv1d_step_test"
  "conv1d_step_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/conv1d_step_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
