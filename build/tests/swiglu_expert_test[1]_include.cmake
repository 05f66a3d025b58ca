if(EXISTS "/work/main/build/tests/swiglu_expert_test")
  if(NOT EXISTS "/work/main/build/tests/swiglu_expert_test[1]_tests.cmake" OR
     NOT "/work/main/build/tests/swiglu_expert_test[1]_tests.cmake" IS_NEWER_THAN "/work/main/build/tests/swiglu_expert_test" OR
     NOT "/work/main/build/tests/swiglu_expert_test[1]_tests.cmake" IS_NEWER_THAN "${CMAKE_CURRENT_LIST_FILE}")
    include("/usr/share/cmake-3.25/Modules/GoogleTestAddTests.cmake")
    gtest_discover_tests_impl(
      TEST_EXECUTABLE [==[/work/main/build/tests/swiglu_expert_test]==]
      TEST_EXECUTOR [==[]==]
      TEST_WORKING_DIR [==[/work/main/build/tests]==]
      TEST_EXTRA_ARGS [==[]==]
      TEST_PROPERTIES [==[TIMEOUT;600]==]
      TEST_PREFIX [==[kernels.]==]
      TEST_SUFFIX [==[]==]
      TEST_FILTER [==[]==]
      NO_PRETTY_TYPES [==[FALSE]==]
      NO_PRETTY_VALUES [==[FALSE]==]
      TEST_LIST [==[swiglu_expert_test_TESTS]==]
      CTEST_FILE [==[/work/main/build/tests/swiglu_expert_test[1]_tests.cmake]==]
      TEST_DISCOVERY_TIMEOUT [==[5]==]
      TEST_XML_OUTPUT_DIR [==[]==]
    )
  endif()
  include("/work/main/build/tests/swiglu_expert_test[1]_tests.cmake")
else()
  add_test(swiglu_expert_test_NOT_BUILT swiglu_expert_test_NOT_BUILT)
endif()
