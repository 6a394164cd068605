// Test helpers (see temp_files.h).
#include "temp_files.h"

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace slowpipe::models::testing {

TempFile::TempFile(const std::string& suffix) {
  static std::atomic<int> counter{0};
  path_ = (std::filesystem::temp_directory_path() / ("slowpipe_test_" + std::to_string(::getpid()) +
                                                     "_" + std::to_string(counter++) + suffix))
              .string();
}

TempFile::~TempFile() {
  std::remove(path_.c_str());
}

void TempFile::write(const std::string& bytes) const {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path_);
}

std::string gzip_bytes(const std::string& bytes) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string out(deflateBound(&zs, bytes.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string idx_header(uint32_t magic, const std::vector<uint32_t>& dims) {
  std::string h;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<char>((v >> s) & 0xff));
  };
  put(magic);
  for (auto d : dims) put(d);
  return h;
}

}  // namespace slowpipe::models::testing
