file(REMOVE_RECURSE
  "CMakeFiles/attention_test.dir/kernels/attention_test.cpp.o"
  "CMakeFiles/attention_test.dir/kernels/attention_test.cpp.o.d"
  "attention_test"
  "attention_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/attention_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
