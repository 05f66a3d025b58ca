# Sourced by the GPU machine's scripts (scripts/device/gpu_*.sh): unpacks devbin/bin.tar.xz, puts
# its binaries and libraries on PATH / LD_LIBRARY_PATH, selects NVIDIA's Vulkan driver where the
# machine has it, and leaves the shell in the repository root, $root.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root/devbin" && tar -xJf bin.tar.xz
export LD_LIBRARY_PATH=$root/devbin/lib PATH=$root/devbin:$PATH
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cd "$root"
