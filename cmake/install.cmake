# `cmake --install` and find_package(moeoracle): the CLI, the static libraries with their public
# headers, and a CMake package config, so an engine's own tests link the ops and the compare
# harness without our source tree:
#   find_package(moeoracle CONFIG REQUIRED)
#   target_link_libraries(t PRIVATE moeoracle::kernels_cpu)   # every op, all three tiers
#   target_link_libraries(t PRIVATE moeoracle::oracle)        # checkpoints, the forward, dumps
#   target_link_libraries(t PRIVATE moeoracle::compare)       # Vulkan kernels against the truth
#   target_link_libraries(t PRIVATE moeoracle::tap_writer)    # the engine-side C tap writer header
# Headers go to <prefix>/include/moeoracle/{core,ops,oracle,compare}/ and are included as the
# project includes them ("ops/rmsnorm.h", "compare/run/driver.h"); the dependencies (Debian
# packages) are found again by the package config (cmake/moeoracleConfig.cmake.in).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MOE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/moeoracle)
set(MOE_HEADER_DIR ${CMAKE_INSTALL_INCLUDEDIR}/moeoracle)

# The three libraries users name; compare is the driver, model comparison and mutation together.
add_library(compare INTERFACE)
target_link_libraries(compare INTERFACE compare_driver compare_model compare_mutate)

set(MOE_INSTALLED_LIBS kernels_cpu kernels_registry tap_writer)
if(NOT MOE_KERNELS_ONLY)
  list(APPEND MOE_INSTALLED_LIBS oracle compare_core compare_vk compare_driver compare_model compare_mutate compare)
  install(TARGETS moeoracle RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
install(TARGETS ${MOE_INSTALLED_LIBS} EXPORT moeoracleTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${MOE_HEADER_DIR})
install(EXPORT moeoracleTargets NAMESPACE moeoracle:: DESTINATION ${MOE_CMAKE_DIR} COMPONENT dev)

install(DIRECTORY kernels_cpu/core kernels_cpu/ops kernels_cpu/spec DESTINATION ${MOE_HEADER_DIR} COMPONENT dev
        FILES_MATCHING PATTERN "*.h")
install(FILES kernels_cpu/op_registry.h kernels_cpu/op_list.def ${CMAKE_BINARY_DIR}/kernels_cpu/generated/ops_all.h
        DESTINATION ${MOE_HEADER_DIR} COMPONENT dev)
if(NOT MOE_KERNELS_ONLY)
  install(DIRECTORY oracle compare DESTINATION ${MOE_HEADER_DIR} COMPONENT dev FILES_MATCHING PATTERN "*.h")
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/moeoracleConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/moeoracleConfig.cmake INSTALL_DESTINATION ${MOE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/moeoracleConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/moeoracleConfig.cmake ${CMAKE_BINARY_DIR}/moeoracleConfigVersion.cmake
        DESTINATION ${MOE_CMAKE_DIR} COMPONENT dev)
