file(REMOVE_RECURSE
  "libkernels_registry.a"
)
