#!/usr/bin/env bash
# Installs moeoracle's build and test dependencies from Debian 12 packages (idempotent: apt runs
# only when something is missing). Needs root, as the README's commands are run.
set -euo pipefail
packages=(cmake g++ make lld pkg-config libeigen3-dev libopenblas-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libbenchmark-dev libhwy-dev libvulkan-dev glslc libspirv-cross-c-shared-dev libshaderc-dev
  mesa-vulkan-drivers python3-pybind11 python3-numpy python3-pytest python3-dev)
# --test: the tests also render the HTML report in a headless browser.
# --tsan: the ThreadSanitizer build (scripts/sanitize.sh tsan) uses clang 14 with LLVM's OpenMP
# runtime, whose archer tool tells TSan about OpenMP's synchronisation (GCC's libgomp cannot).
# --fuzz: the fuzz harnesses (scripts/fuzz.sh): clang 14 with its libFuzzer/sanitizer runtimes.
for arg in "$@"; do
  case "$arg" in
    --test) packages+=(chromium) ;;
    --tsan) packages+=(clang-14 libomp-14-dev libclang-rt-14-dev) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev libomp-dev) ;;
    *) echo "install-deps.sh: unknown option $arg (expected --test, --tsan or --fuzz)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
