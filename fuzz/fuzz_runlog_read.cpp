// Fuzz target: the run-log readers behind `slowpipe export`. The input bytes are
// written to a scratch .h5 file, which is then read the way `slowpipe export`
// reads it (attributes, label, tables, row counts, TSV, blobs). A damaged or
// foreign file must end in UsageError (not a run log) or DataError (a damaged
// one); a crash, a hang or any other exception is a bug in our readers or in
// the HDF5 library under them.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "sim/export.h"
#include "sim/runlog.h"

namespace {

// One scratch file per fuzzing process (libFuzzer -jobs runs several).
const std::string& scratch_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/fuzz_runlog_read_" +
           std::to_string(getpid()) + ".h5";
  }();
  return path;
}

template <typename F>
void expect_clean_errors(F&& body) {
  try {
    body();
  } catch (const slowpipe::UsageError&) {
  } catch (const slowpipe::DataError&) {
  }
}

// Known HDF5 1.10.8 bugs, not ours to fix, reached by reading any
// variable-length string (every string attribute of a run log): a global heap
// object that claims more bytes than its heap collection holds makes H5HG_read
// memcpy out of bounds, and a free-space object of size 0 makes the collection
// parser loop forever. Such inputs are skipped so the fuzzer keeps looking at
// our code: true when a global heap collection ("GCOL", 8-byte lengths) in
// `bytes`, walked the way HDF5 walks it, has an object that does not move the
// walk forward or runs past the collection, or the collection runs past the input.
bool has_broken_global_heap(const uint8_t* bytes, size_t size) {
  constexpr uint64_t kHeader = 16;  // collection header = object header size
  const auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | bytes[at + static_cast<size_t>(i)];
    return v;
  };
  for (size_t at = 0; at + kHeader <= size; ++at) {
    if (std::memcmp(bytes + at, "GCOL", 4) != 0) continue;
    const uint64_t collection = u64(at + 8);
    if (collection < kHeader || collection > size - at) return true;
    for (uint64_t off = kHeader; off < collection;) {
      if (collection - off < kHeader) break;  // a tail too small for an object: free space
      const unsigned index = bytes[at + off] | (bytes[at + off + 1] << 8);
      const uint64_t object = u64(at + off + 8);
      if (object > collection) return true;
      const uint64_t need = index > 0 ? kHeader + (object + 7) / 8 * 8 : object;
      if (need == 0 || need > collection - off) return true;
      off += need;
    }
  }
  return false;
}

}  // namespace

// HDF5 1.10 leaks a few object-header buffers inside H5Fopen when it fails on a
// damaged root group (an HDF5 bug, nothing of ours to free); LeakSanitizer is
// told to leave allocations made inside libhdf5 alone, and still reports ours.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libhdf5\n";
}

// HDF5 allocates what a damaged length field asks for (e.g. 2^64 - 2^40 bytes)
// and handles the failed malloc as an error: let malloc return null as it does
// outside the sanitizer. A failed operator new in our code still throws
// std::bad_alloc, which is reported. Requests over 512 MiB (no part of a small
// fuzzed file needs one) fail at once too: HDF5 1.10 otherwise zero-fills a
// multi-gigabyte conversion buffer for a damaged variable-length string
// (H5T__conv_vlen), which takes longer than the per-input timeout.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=512";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (has_broken_global_heap(data, size)) return 0;
  const std::string& path = scratch_path();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    const bool written = std::fwrite(data, 1, size, f) == size;
    if (std::fclose(f) != 0 || !written) return 0;
  }
  namespace sim = slowpipe::sim;
  expect_clean_errors([&] { sim::read_attributes(path); });
  expect_clean_errors([&] { sim::run_label(path); });
  expect_clean_errors([&] { sim::read_row_counts(path); });
  std::vector<std::string> tables = {"train", "eval"};
  expect_clean_errors([&] {
    for (const auto& t : sim::list_tables(path)) tables.push_back(t);
  });
  for (const auto& t : tables) {
    expect_clean_errors([&] {
      std::ostringstream out, warnings;
      sim::export_table(path, t, out, warnings);
    });
  }
  expect_clean_errors([&] {
    for (const auto& b : sim::list_blobs(path)) sim::read_text(path, b);
  });
  std::remove(path.c_str());
  return 0;
}
