// A heap for one large, short-lived command (`slowpipe netsim` on a big
// scenario): freed memory is kept and reused instead of handed back, and the
// heap is grown once by `bytes` and backed by transparent huge pages where the
// kernel allows them (madvise mode). On the 2-core VMs this project runs on a
// page fault costs 7-9 us, so 100,000 flows (about 70 MB touched) spent
// 0.13 s of CPU in the kernel; see docs/performance.md. Only glibc on Linux;
// elsewhere, and when anything is refused, it does nothing: it changes where
// memory comes from, never what the program computes.
#pragma once

#include <cstddef>

namespace slowpipe {

// Returns whether the heap was grown and advised. `bytes` outside [4 MiB,
// 1 GiB] is refused untouched; otherwise malloc keeps freed memory from then
// on, even where growing or advising fails. Call before the large
// allocations, once per process.
bool prepare_large_heap(std::size_t bytes);

}  // namespace slowpipe
