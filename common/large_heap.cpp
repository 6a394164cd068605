#include "common/large_heap.h"

#include <cstdint>
#include <cstdlib>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace slowpipe {

bool prepare_large_heap(std::size_t bytes) {
#if defined(__linux__) && defined(__GLIBC__)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;  // x86-64's huge page
  // glibc caps the mmap threshold at 32 MiB on 64-bit: blocks up to that come
  // from the heap, and nothing freed is trimmed while the command runs.
  constexpr std::size_t kStep = std::size_t{16} << 20, kMaxBlocks = 64;
  if (bytes < 2 * kHuge || bytes > kStep * kMaxBlocks) return false;
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 1 << 30) != 1 ||
      mallopt(M_TOP_PAD, 1 << 20) != 1)
    return false;
  // Blocks of 16 MiB (below the threshold) make the heap grow by `bytes`;
  // freed, they merge into its top and stay.
  void* blocks[kMaxBlocks];
  std::size_t count = 0;
  for (std::size_t got = 0; got < bytes && count < kMaxBlocks; got += kStep) {
    blocks[count] = std::malloc(kStep);
    if (blocks[count] == nullptr) break;
    ++count;
  }
  const auto first = count > 0 ? reinterpret_cast<std::uintptr_t>(blocks[0]) : 0;
  for (std::size_t i = count; i-- > 0;) std::free(blocks[i]);
  if (count * kStep < bytes) return false;
  const auto end = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const std::uintptr_t from = (first + kHuge - 1) & ~(kHuge - 1), to = end & ~(kHuge - 1);
  // The blocks must lie in the heap below the break (not mmapped elsewhere).
  if (end == static_cast<std::uintptr_t>(-1) || first >= end || end - first > 2 * bytes ||
      to <= from)
    return false;
  return madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE) == 0;
#else
  (void)bytes;
  return false;
#endif
}

}  // namespace slowpipe
