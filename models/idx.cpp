// IDX parsing with strict checks: magic, dimension count, exact size.
#include "models/idx.h"

#include <cstdio>

#include "common/errors.h"
#include "models/file_bytes.h"

namespace slowpipe::models {
namespace {

uint32_t be32(const std::string& b, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + at);
  return (static_cast<uint32_t>(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

IdxArray parse_idx(const std::string& bytes, int expected_dims, const std::string& path) {
  const uint32_t want = 0x0800u | static_cast<uint32_t>(expected_dims);
  if (bytes.size() < 4) {
    throw DataError("IDX file '" + path + "' is too short for a header (" +
                    std::to_string(bytes.size()) + " bytes)");
  }
  const uint32_t magic = be32(bytes, 0);
  if (magic != want) {
    throw DataError("IDX file '" + path + "' has wrong magic number " + hex32(magic) +
                    " (expected " + hex32(want) + ": unsigned bytes, " +
                    std::to_string(expected_dims) + " dimensions)");
  }
  const size_t header = 4 + 4 * static_cast<size_t>(expected_dims);
  if (bytes.size() < header) {
    throw DataError("IDX file '" + path + "' is truncated inside its header");
  }
  IdxArray out;
  size_t count = 1;
  for (int d = 0; d < expected_dims; ++d) {
    const uint32_t n = be32(bytes, 4 + 4 * static_cast<size_t>(d));
    out.dims.push_back(n);
    count *= n;
  }
  if (bytes.size() - header != count) {
    throw DataError("IDX file '" + path + "' size mismatch: the header announces " +
                    std::to_string(count) + " bytes of data, the file holds " +
                    std::to_string(bytes.size() - header));
  }
  out.data = bytes.substr(header);
  return out;
}

IdxArray read_idx(const std::string& path, int expected_dims, const std::string& debian_package) {
  return parse_idx(read_file_bytes(path, debian_package), expected_dims, path);
}

}  // namespace slowpipe::models
