// The IDX format of MNIST and Fashion-MNIST (LeCun et al.; Xiao et al. 2017):
// a big-endian header - magic 0x0000 <type> <ndims>, then ndims uint32 sizes -
// followed by the data. slowpipe reads the unsigned-byte type (0x08) only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace slowpipe::models {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. [60000, 28, 28]
  std::string data;           // prod(dims) unsigned bytes, row-major
};

// Parses IDX bytes already in memory (`path` is for messages). Throws DataError
// naming the file for a wrong magic number (type or number of dimensions other
// than unsigned bytes / `expected_dims`) or a size that does not match the header.
IdxArray parse_idx(const std::string& bytes, int expected_dims, const std::string& path);

// The number of data bytes announced by an IDX header (`bytes` holds at least
// the header). Throws DataError as parse_idx does, and for sizes whose product
// would overflow.
uint64_t idx_data_bytes(const std::string& bytes, int expected_dims, const std::string& path);

// Reads a (gzipped) IDX file: the header first, then no more data than it
// announces (a plain file whose size disagrees is refused before its data is
// read; a gzip stream is inflated no further than the announced size). `key`
// names the option in the messages for a path that is not a readable file.
IdxArray read_idx(const std::string& path, int expected_dims, const std::string& debian_package,
                  const std::string& key = "data.path");

}  // namespace slowpipe::models
