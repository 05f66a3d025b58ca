# CPack: Debian packages of what cmake/install.cmake installs (`cpack -G DEB` in the build tree,
# or scripts/package_deb.sh), depending only on Debian 12 packages:
#   moeoracle          the CLI (and the Python module, where it is built): runtime libraries found
#                      by dpkg-shlibdeps; lavapipe recommended for `compare` on machines with no GPU
#   libmoeoracle-dev   headers, static libraries and the CMake package config for
#                      find_package(moeoracle); depends on the -dev packages the config finds
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME moeoracle)
set(CPACK_PACKAGE_VENDOR "moeoracle")
set(CPACK_PACKAGE_CONTACT "moeoracle developers <moeoracle@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "CPU ground truth and differential oracle for streaming-MoE LLM inference engines")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME moeoracle)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "mesa-vulkan-drivers")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libmoeoracle-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "moeoracle (= ${PROJECT_VERSION}), libeigen3-dev, libhwy-dev, nlohmann-json3-dev, libvulkan-dev, libspirv-cross-c-shared-dev, libshaderc-dev, glslang-dev, spirv-tools, pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
include(CPack)
