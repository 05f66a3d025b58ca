file(REMOVE_RECURSE
  "CMakeFiles/decay_beta_test.dir/kernels/decay_beta_test.cpp.o"
  "CMakeFiles/decay_beta_test.dir/kernels/decay_beta_test.cpp.o.d"
  "decay_beta_test"
  "decay_beta_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/decay_beta_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
