// Fuzz target: the run-log readers behind `slowpipe export`. The input bytes are
// written to a scratch .h5 file, which is then read the way `slowpipe export`
// reads it (attributes, label, tables, row counts, TSV, blobs). A damaged or
// foreign file must end in UsageError (not a run log) or DataError (a damaged
// one); a crash, a hang or any other exception is a bug in our readers or in
// the HDF5 library under them. Inputs are not filtered: the readers themselves
// check an older log's variable-length strings (global heap) before HDF5 reads
// them (runlog/runlog_raw_check.cpp), and new logs hold none.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "runlog/export.h"
#include "runlog/runlog.h"

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
// fuzzed file needs one) fail at once too, so that a damaged size field HDF5
// allocates for cannot take longer than the per-input timeout to zero-fill.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=512";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    const bool written = std::fwrite(data, 1, size, f) == size;
    if (std::fclose(f) != 0 || !written) return 0;
  }
  namespace runlog = slowpipe::runlog;
  expect_clean_errors([&] { runlog::read_attributes(path); });
  expect_clean_errors([&] { runlog::run_label(path); });
  expect_clean_errors([&] { runlog::read_row_counts(path); });
  std::vector<std::string> tables = {"train", "eval"};
  expect_clean_errors([&] {
    for (const auto& t : runlog::list_tables(path)) tables.push_back(t);
  });
  for (const auto& t : tables) {
    expect_clean_errors([&] {
      std::ostringstream out, warnings;
      runlog::export_table(path, t, out, warnings);
    });
  }
  expect_clean_errors([&] {
    for (const auto& b : runlog::list_blobs(path)) runlog::read_text(path, b);
  });
  std::remove(path.c_str());
  return 0;
}
