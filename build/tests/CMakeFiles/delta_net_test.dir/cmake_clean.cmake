file(REMOVE_RECURSE
  "CMakeFiles/delta_net_test.dir/kernels/delta_net_test.cpp.o"
  "CMakeFiles/delta_net_test.dir/kernels/delta_net_test.cpp.o.d"
  "delta_net_test"
  "delta_net_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/delta_net_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
