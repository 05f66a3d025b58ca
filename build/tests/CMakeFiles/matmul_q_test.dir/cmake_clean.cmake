file(REMOVE_RECURSE
  "CMakeFiles/matmul_q_test.dir/kernels/matmul_q_test.cpp.o"
  "CMakeFiles/matmul_q_test.dir/kernels/matmul_q_test.cpp.o.d"
  "matmul_q_test"
  "matmul_q_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/matmul_q_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
