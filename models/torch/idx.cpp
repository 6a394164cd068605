// IDX parsing with strict checks: magic, dimension count, exact size, checked
// against the file (or the inflated stream) before the data is read.
#include "models/torch/internal/idx.h"

#include <cstdio>

#include "common/errors.h"
#include "models/torch/internal/file_bytes.h"
#include "models/torch/internal/input_file.h"

namespace slowpipe::models {
namespace {

uint32_t be32(const std::string& b, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + at);
  return (static_cast<uint32_t>(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
}

size_t idx_header_bytes(int dims) {
  return 4 + 4 * static_cast<size_t>(dims);
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

uint64_t idx_data_bytes(const std::string& bytes, int expected_dims, const std::string& path) {
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
  if (bytes.size() < idx_header_bytes(expected_dims)) {
    throw DataError("IDX file '" + path + "' is truncated inside its header");
  }
  uint64_t count = 1;
  for (int d = 0; d < expected_dims; ++d) {
    const uint32_t n = be32(bytes, 4 + 4 * static_cast<size_t>(d));
    // Sizes are below 2^32 each: stop before the product could wrap around.
    if (n != 0 && count > (uint64_t{1} << 48) / n) {
      throw DataError("IDX file '" + path + "' announces an impossible size (dimension " +
                      std::to_string(d) + " = " + std::to_string(n) + ")");
    }
    count *= n;
  }
  return count;
}

IdxArray parse_idx(const std::string& bytes, int expected_dims, const std::string& path) {
  const uint64_t count = idx_data_bytes(bytes, expected_dims, path);
  const size_t header = idx_header_bytes(expected_dims);
  if (bytes.size() - header != count) {
    throw DataError("IDX file '" + path + "' size mismatch: the header announces " +
                    std::to_string(count) + " bytes of data, the file holds " +
                    std::to_string(bytes.size() - header));
  }
  IdxArray out;
  for (int d = 0; d < expected_dims; ++d) out.dims.push_back(be32(bytes, 4 + 4 * size_t(d)));
  out.data = bytes.substr(header);
  return out;
}

IdxArray read_idx(const std::string& path, int expected_dims, const std::string& debian_package,
                  const std::string& key) {
  const size_t header = idx_header_bytes(expected_dims);
  const uint64_t limit = default_input_limit_bytes();
  uint64_t file_bytes = 0;
  std::string head = read_input_prefix(path, key, header, &file_bytes, debian_package);
  if (is_gzip(head)) {
    // The header first; then inflate no more than it announces (plus one byte to
    // tell "more" from "exact").
    const std::string raw = read_input_file(path, key, limit, debian_package);
    const uint64_t count = idx_data_bytes(gunzip_prefix(raw, path, header), expected_dims, path);
    if (header + count > limit) {
      throw UsageError(key + ": IDX file '" + path + "' announces " + std::to_string(count) +
                       " bytes of data, more than slowpipe can hold from one input file here");
    }
    return parse_idx(gunzip_prefix(raw, path, static_cast<size_t>(header + count + 1)),
                     expected_dims, path);
  }
  // Plain: the header and the file size must agree before the data is read.
  const uint64_t count = idx_data_bytes(head, expected_dims, path);
  if (file_bytes - header != count) {
    throw DataError("IDX file '" + path + "' size mismatch: the header announces " +
                    std::to_string(count) + " bytes of data, the file holds " +
                    std::to_string(file_bytes - header));
  }
  return parse_idx(read_input_file(path, key, limit, debian_package), expected_dims, path);
}

}  // namespace slowpipe::models
