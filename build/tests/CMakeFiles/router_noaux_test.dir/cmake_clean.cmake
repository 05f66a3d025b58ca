file(REMOVE_RECURSE
  "CMakeFiles/router_noaux_test.dir/kernels/router_noaux_test.cpp.o"
  "CMakeFiles/router_noaux_test.dir/kernels/router_noaux_test.cpp.o.d"
  "router_noaux_test"
  "router_noaux_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/router_noaux_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
