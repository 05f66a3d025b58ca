file(REMOVE_RECURSE
  "CMakeFiles/dequant_test.dir/kernels/dequant_test.cpp.o"
  "CMakeFiles/dequant_test.dir/kernels/dequant_test.cpp.o.d"
  "dequant_test"
  "dequant_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/dequant_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
