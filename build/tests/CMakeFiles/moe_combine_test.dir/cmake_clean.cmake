file(REMOVE_RECURSE
  "CMakeFiles/moe_combine_test.dir/kernels/moe_combine_test.cpp.o"
  "CMakeFiles/moe_combine_test.dir/kernels/moe_combine_test.cpp.o.d"
  "moe_combine_test"
  "moe_combine_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/moe_combine_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
