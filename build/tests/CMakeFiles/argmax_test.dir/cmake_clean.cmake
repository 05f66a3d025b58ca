file(REMOVE_RECURSE
  "CMakeFiles/argmax_test.dir/kernels/argmax_test.cpp.o"
  "CMakeFiles/argmax_test.dir/kernels/argmax_test.cpp.o.d"
  "argmax_test"
  "argmax_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/argmax_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
