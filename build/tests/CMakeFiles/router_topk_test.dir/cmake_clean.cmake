file(REMOVE_RECURSE
  "CMakeFiles/router_topk_test.dir/kernels/router_topk_test.cpp.o"
  "CMakeFiles/router_topk_test.dir/kernels/router_topk_test.cpp.o.d"
  "router_topk_test"
  "router_topk_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/router_topk_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
