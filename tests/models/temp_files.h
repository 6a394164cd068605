// Test helpers: temporary files removed on scope exit, and gzip compression of
// bytes in memory (to write gzip inputs, valid or deliberately broken).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace slowpipe::models::testing {

// A file path in the temp directory, unique to this process; the file (if
// created) is removed when the object dies.
class TempFile {
 public:
  explicit TempFile(const std::string& suffix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  void write(const std::string& bytes) const;

 private:
  std::string path_;
};

// One gzip member holding `bytes` (zlib deflate with gzip framing).
std::string gzip_bytes(const std::string& bytes);
// The raw bytes of a file.
std::string slurp(const std::string& path);
// An IDX header: the magic number, then each dimension (big-endian uint32).
std::string idx_header(uint32_t magic, const std::vector<uint32_t>& dims);

}  // namespace slowpipe::models::testing
