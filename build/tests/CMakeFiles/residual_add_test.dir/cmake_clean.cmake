file(REMOVE_RECURSE
  "CMakeFiles/residual_add_test.dir/kernels/residual_add_test.cpp.o"
  "CMakeFiles/residual_add_test.dir/kernels/residual_add_test.cpp.o.d"
  "residual_add_test"
  "residual_add_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/residual_add_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
