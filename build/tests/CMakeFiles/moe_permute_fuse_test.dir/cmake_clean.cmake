file(REMOVE_RECURSE
  "CMakeFiles/moe_permute_fuse_test.dir/kernels/moe_permute_fuse_test.cpp.o"
  "CMakeFiles/moe_permute_fuse_test.dir/kernels/moe_permute_fuse_test.cpp.o.d"
  "moe_permute_fuse_test"
  "moe_permute_fuse_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/moe_permute_fuse_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
