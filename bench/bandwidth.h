// The memory-bandwidth ceiling every benchmark reports against, measured by the same binary.
#pragma once
#include <cstdint>

namespace moe::bench {

// Size of the highest-level cache of cpu0 from sysfs ("107520K"); 32 MiB if unreadable.
int64_t llc_bytes();

// STREAM triad a[i] = b[i] + s*c[i] over three f32 arrays of 1.5 x LLC each (4.5 x LLC in all)
// with `threads` OpenMP threads, repeated `reps` times after one warm-up pass. Returns GB/s
// counting 4 streams of 4 B per element: two reads, the write and the write-allocate read of a
// (plain stores). The 3-stream STREAM convention is 3/4 of it.
double triad_gbs(int threads, int reps = 5);

}  // namespace moe::bench
