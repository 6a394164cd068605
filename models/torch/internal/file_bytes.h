// Reading data files into memory: plain files as they are, gzip files (and
// dictzip, which is gzip with an index in the header's extra field) inflated
// with zlib. Nothing is cached on disk.
//
// Errors name the file: a missing file is a UsageError that also names the
// Debian package providing it (when known); a path that is not a regular
// readable file (directory, /dev/zero, FIFO) and a file, or an inflated
// stream, larger than the limit are UsageErrors naming the key and the file,
// found before the bytes are read or inflated (see models/torch/internal/input_file.h); a
// truncated or corrupt gzip stream is a DataError.
#pragma once

#include <cstdint>
#include <string>

namespace slowpipe::models {

// The whole file, inflated when it starts with the gzip magic bytes.
// `debian_package` (may be empty) goes into the message for a missing file;
// `key` names the option the path came from. Neither the file nor its inflated
// contents may exceed `max_bytes` (0: default_input_limit_bytes()).
std::string read_file_bytes(const std::string& path, const std::string& debian_package = "",
                            const std::string& key = "data.path", uint64_t max_bytes = 0);

// True when `bytes` starts with the gzip magic (1f 8b).
bool is_gzip(const std::string& bytes);

// Inflates a gzip stream (one or more members) held in memory; `path` is only
// used in error messages. Throws DataError when the stream is truncated or
// corrupt, and UsageError (naming `key`) when it inflates to more than
// `max_bytes` (0: default_input_limit_bytes()), before inflating further.
std::string gunzip(const std::string& compressed, const std::string& path,
                   uint64_t max_bytes = 0, const std::string& key = "data.path");

// The first `n` inflated bytes of a gzip stream (fewer when it is shorter),
// inflating no more than needed: to read a header before the body.
std::string gunzip_prefix(const std::string& compressed, const std::string& path, size_t n);

}  // namespace slowpipe::models
