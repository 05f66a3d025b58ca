# Cross build for 64-bit ARM with Debian's cross toolchain, tests run under qemu-user
# (docs/portability.md):
#   apt-get install g++-aarch64-linux-gnu qemu-user; dpkg --add-architecture arm64; apt-get update
#   apt-get install libhwy-dev:arm64 libgtest-dev:arm64
#   cmake -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DMOE_KERNELS_ONLY=ON
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# The target's libraries and CMake packages (multiarch paths), the host's headers-only ones
# (Eigen) as they are.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# ctest (and gtest_discover_tests) run the test binaries through qemu (CPU model `max`). One
# OpenMP thread is what scripts/cross_arm64.sh runs with (docs/portability.md says why).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu;-cpu;max)
