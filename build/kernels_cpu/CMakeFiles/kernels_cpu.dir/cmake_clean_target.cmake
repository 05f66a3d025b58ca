file(REMOVE_RECURSE
  "libkernels_cpu.a"
)
