// Deliberate bugs, built only under MOE_SANITIZE=address: "heap" reads one past a heap array,
// "ub" overflows a signed int. Each test passes only if ASan (resp. UBSan, aborting) reports it:
// the proof that the sanitized suite's silence means something in this build (docs/sanitizers.md).
#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  volatile int n = 8;  // not a constant: the compiler cannot fold the bug away
  if (argc > 1 && std::strcmp(argv[1], "heap") == 0) {
    std::vector<int> v(size_t(n), 1);
    int* p = v.data();
    std::printf("%d\n", p[n]);  // one past the end
  } else if (argc > 1 && std::strcmp(argv[1], "ub") == 0) {
    int big = 0x7fffffff - 4;
    big += n;  // signed overflow
    std::printf("%d\n", big);
  }
  return 0;
}
