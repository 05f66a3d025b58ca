file(REMOVE_RECURSE
  "CMakeFiles/matvec_bf16_test.dir/kernels/matvec_bf16_test.cpp.o"
  "CMakeFiles/matvec_bf16_test.dir/kernels/matvec_bf16_test.cpp.o.d"
  "matvec_bf16_test"
  "matvec_bf16_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/matvec_bf16_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
