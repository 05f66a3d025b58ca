file(REMOVE_RECURSE
  "CMakeFiles/qk_norm_test.dir/kernels/qk_norm_test.cpp.o"
  "CMakeFiles/qk_norm_test.dir/kernels/qk_norm_test.cpp.o.d"
  "qk_norm_test"
  "qk_norm_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/qk_norm_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
