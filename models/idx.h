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

// Reads a (gzipped) IDX file: read_file_bytes + parse_idx.
IdxArray read_idx(const std::string& path, int expected_dims, const std::string& debian_package);

}  // namespace slowpipe::models
