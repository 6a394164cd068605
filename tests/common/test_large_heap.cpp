// prepare_large_heap: on glibc it grows the heap by the bytes asked (mallinfo2
// counts them as arena, not as mmapped blocks), large blocks then come from that
// heap, and memory behaves as before; too small a request is refused and
// changes nothing. Elsewhere it refuses every request.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "common/large_heap.h"

// Under AddressSanitizer (make sanitize) malloc is the sanitizer's: glibc's
// tuning and counters do not apply, so only the refusals and plain use are
// checked there.
#if defined(__SANITIZE_ADDRESS__)
#define SLOWPIPE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLOWPIPE_TEST_ASAN 1
#endif
#endif
#if defined(__linux__) && defined(__GLIBC__) && !defined(SLOWPIPE_TEST_ASAN)
#define SLOWPIPE_TEST_GLIBC_HEAP 1
#include <malloc.h>
#endif

TEST_CASE("prepare_large_heap: refuses requests below two huge pages") {
  CHECK_FALSE(slowpipe::prepare_large_heap(0));
  CHECK_FALSE(slowpipe::prepare_large_heap(size_t{3} << 20));
}

TEST_CASE("prepare_large_heap: the heap grows once, and blocks of 20 MB come from it") {
  constexpr size_t kBytes = size_t{96} << 20;
  const bool prepared = slowpipe::prepare_large_heap(kBytes);
#ifdef SLOWPIPE_TEST_GLIBC_HEAP
  // madvise may be refused (a kernel without transparent huge pages); the
  // heap has grown either way.
  const struct mallinfo2 before = mallinfo2();
  CHECK(before.arena >= kBytes);
  std::vector<double> big(size_t{20} << 17);  // 20 MiB: mmapped by default
  const struct mallinfo2 during = mallinfo2();
  CHECK(during.hblkhd == before.hblkhd);  // no new mmapped block
  std::iota(big.begin(), big.end(), 0.0);
  CHECK(big.back() == static_cast<double>(big.size() - 1));
  (void)prepared;
#else
  std::vector<double> big(size_t{20} << 17);
  std::iota(big.begin(), big.end(), 0.0);
  CHECK(big.back() == static_cast<double>(big.size() - 1));
  (void)prepared;
#endif
}
