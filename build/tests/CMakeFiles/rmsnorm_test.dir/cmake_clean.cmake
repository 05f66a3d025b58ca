file(REMOVE_RECURSE
  "CMakeFiles/rmsnorm_test.dir/kernels/rmsnorm_test.cpp.o"
  "CMakeFiles/rmsnorm_test.dir/kernels/rmsnorm_test.cpp.o.d"
  "rmsnorm_test"
  "rmsnorm_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/rmsnorm_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
