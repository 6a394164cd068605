// Opening input files (data files, checkpoints) without surprises: a path is
// refused before anything is read, or anything allocated, when it is missing,
// a directory, a device (/dev/zero), a FIFO or socket, unreadable, or larger
// than the caller's limit. Files are opened non-blocking and checked with
// fstat on the open descriptor, so a FIFO never blocks and the checked file is
// the one read.
//
// Every refusal is a UsageError naming the option the path came from (`key`,
// e.g. "data.path") and the file; a missing file also names the Debian package
// that provides it, when one is given.
#pragma once

#include <cstdint>
#include <string>

namespace slowpipe::models {

// Physical memory of this machine in bytes (sysconf pages x page size).
uint64_t physical_memory_bytes();

// The default limit on the bytes slowpipe holds from one input file: a
// quarter of physical memory (a text corpus is held twice, as bytes and as
// windows, and inflating needs room for both the compressed and the output).
uint64_t default_input_limit_bytes();

// Checks that `path` is a regular file this process can read and returns its
// size in bytes. `key` names the option in messages ("data.path"; may be empty).
uint64_t check_input_file(const std::string& path, const std::string& key,
                          const std::string& debian_package = "");

// Checks that `path`, when it exists, is a directory (a missing one is left to
// the checks of the files inside it, whose messages name the package).
void check_input_dir(const std::string& path, const std::string& key);

// The whole file after the checks above; a file larger than `max_bytes` is a
// UsageError before anything is read. A read error is a DataError.
std::string read_input_file(const std::string& path, const std::string& key, uint64_t max_bytes,
                            const std::string& debian_package = "");

// At most the first `n` bytes of the file (fewer when it is shorter), after the
// checks above, and the file's size in `*file_bytes`.
std::string read_input_prefix(const std::string& path, const std::string& key, size_t n,
                              uint64_t* file_bytes, const std::string& debian_package = "");

}  // namespace slowpipe::models
