// Reading data files into memory: plain files as they are, gzip files (and
// dictzip, which is gzip with an index in the header's extra field) inflated
// with zlib. Nothing is cached on disk.
//
// Errors name the file: a missing file is a UsageError that also names the
// Debian package providing it (when known); a truncated or corrupt gzip stream
// is a DataError.
#pragma once

#include <string>

namespace slowpipe::models {

// The whole file, inflated when it starts with the gzip magic bytes.
// `debian_package` (may be empty) goes into the message for a missing file.
std::string read_file_bytes(const std::string& path, const std::string& debian_package = "");

// True when `bytes` starts with the gzip magic (1f 8b).
bool is_gzip(const std::string& bytes);

// Inflates a gzip stream (one or more members) held in memory; `path` is only
// used in error messages. Throws DataError when the stream is truncated or corrupt.
std::string gunzip(const std::string& compressed, const std::string& path);

}  // namespace slowpipe::models
