file(REMOVE_RECURSE
  "CMakeFiles/swiglu_expert_test.dir/kernels/swiglu_expert_test.cpp.o"
  "CMakeFiles/swiglu_expert_test.dir/kernels/swiglu_expert_test.cpp.o.d"
  "swiglu_expert_test"
  "swiglu_expert_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/swiglu_expert_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
