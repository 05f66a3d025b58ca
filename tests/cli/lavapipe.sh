# Sourced by the lavapipe CLI tests: `require_lavapipe BIN` exits 77 (CTest's skip) when BIN sees
# no lavapipe (llvmpipe) Vulkan device.
require_lavapipe() {
  if ! "$1" devices 2>/dev/null | grep -q '^device [0-9]*: llvmpipe'; then
    echo "SKIP: no lavapipe (llvmpipe) Vulkan device"
    exit 77
  fi
}
