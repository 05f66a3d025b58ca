file(REMOVE_RECURSE
  "CMakeFiles/kernels_registry.dir/op_registry.cpp.o"
  "CMakeFiles/kernels_registry.dir/op_registry.cpp.o.d"
  "libkernels_registry.a"
  "libkernels_registry.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/kernels_registry.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
