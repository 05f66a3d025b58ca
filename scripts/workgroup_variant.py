#!/usr/bin/env python3
"""A copy of the bundled manifest whose device-sized workgroups take another "most the device
allows", to check the kernels at workgroup sizes no device gives them, e.g. one subgroup or a
non-power of two (records/compare-runs.md, "Subgroup sizes 4/8/16 on lavapipe").

Usage: scripts/workgroup_variant.py OUT_DIR EXPRESSION [BUILD_DIR]
       e.g. scripts/workgroup_variant.py /tmp/wg3 "3 * subgroup_size"
then   moeoracle compare --kernels /tmp/wg3/m.json --shapes remainders
"""
import glob, json, os, shutil, sys

ALLOWED = "min(max_workgroup_invocations, max_workgroup_subgroups * subgroup_size)"


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    out, expr = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = sys.argv[3] if len(sys.argv) == 4 else os.path.join(root, "build")
    os.makedirs(out, exist_ok=True)
    kernels = []
    for entry in sorted(glob.glob(os.path.join(root, "compare/shaders/*.json"))):
        kernels.append(json.loads(open(entry).read().replace(ALLOWED, f"({expr})")))
    spv = glob.glob(os.path.join(build, "compare/shaders/*.spv"))
    if len(spv) != len(kernels):
        sys.exit(f"{len(spv)} .spv files under {build}/compare/shaders for {len(kernels)} kernels: build first")
    for f in spv:
        shutil.copy(f, out)
    with open(os.path.join(out, "m.json"), "w") as f:
        json.dump({"name": f"bundled, workgroups from {expr}", "version": 1, "kernels": kernels}, f, indent=1)


main()
