// A deliberate data race in an OpenMP loop, built only under MOE_SANITIZE=thread: its test passes
// only if ThreadSanitizer reports the race. It shows that TSan sees inside OpenMP regions in this
// build (clang with LLVM's OpenMP runtime and its archer tool, docs/sanitizers.md), so a clean
// run of the fast tier's tests means something. Not part of any other build.
#include <cstdio>

int main() {
  long sum = 0;
  volatile int n = 1000;  // not a constant: the loop stays a loop
#pragma omp parallel for num_threads(2) schedule(static)
  for (int i = 0; i < n; ++i) sum += i;  // the race: every thread updates sum unsynchronised
  std::printf("sum %ld\n", sum);
  return 0;
}
