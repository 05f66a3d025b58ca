file(REMOVE_RECURSE
  "CMakeFiles/expert_buckets_test.dir/kernels/expert_buckets_test.cpp.o"
  "CMakeFiles/expert_buckets_test.dir/kernels/expert_buckets_test.cpp.o.d"
  "expert_buckets_test"
  "expert_buckets_test.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/expert_buckets_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
