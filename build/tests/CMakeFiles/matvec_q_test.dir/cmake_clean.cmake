file(REMOVE_RECURSE
  "CMakeFiles/matvec_q_test.dir/kernels/matvec_q_test.cpp.o"
  "CMakeFiles/matvec_q_test.dir/kernels/matvec_q_test.cpp.o.d"
  "matvec_q_test"
  "matvec_q_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/matvec_q_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
