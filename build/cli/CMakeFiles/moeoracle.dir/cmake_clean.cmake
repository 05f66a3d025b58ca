file(REMOVE_RECURSE
  "CMakeFiles/moeoracle.dir/main.cpp.o"
  "CMakeFiles/moeoracle.dir/main.cpp.o.d"
  "CMakeFiles/moeoracle.dir/selfcheck.cpp.o"
  "CMakeFiles/moeoracle.dir/selfcheck.cpp.o.d"
  "moeoracle"
  "moeoracle.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/moeoracle.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
