file(REMOVE_RECURSE
  "CMakeFiles/rmsnorm_gated_test.dir/kernels/rmsnorm_gated_test.cpp.o"
  "CMakeFiles/rmsnorm_gated_test.dir/kernels/rmsnorm_gated_test.cpp.o.d"
  "rmsnorm_gated_test"
  "rmsnorm_gated_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/rmsnorm_gated_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
