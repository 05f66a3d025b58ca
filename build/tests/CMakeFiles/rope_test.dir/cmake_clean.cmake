file(REMOVE_RECURSE
  "CMakeFiles/rope_test.dir/kernels/rope_test.cpp.o"
  "CMakeFiles/rope_test.dir/kernels/rope_test.cpp.o.d"
  "rope_test"
  "rope_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/rope_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
