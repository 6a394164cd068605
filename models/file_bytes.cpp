// Whole-file reads and in-memory gzip inflation (zlib's inflate with gzip
// framing, so CRC-32 and length trailers are checked). Multi-member streams are
// concatenated, as gzip(1) does.
#include "models/file_bytes.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>

#include "common/errors.h"

namespace slowpipe::models {

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string read_file_bytes(const std::string& path, const std::string& debian_package) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string msg = "data file '" + path + "' not found or not readable";
    if (!debian_package.empty()) {
      msg += " (it is provided by the Debian package '" + debian_package +
             "': run scripts/install-deps.sh or apt-get install " + debian_package + ")";
    }
    throw UsageError(msg);
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError("error while reading data file '" + path + "'");
  return is_gzip(bytes) ? gunzip(bytes, path) : bytes;
}

std::string gunzip(const std::string& compressed, const std::string& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw DataError("zlib: cannot start inflating " + path);
  // The last member's trailer holds its length mod 2^32: a good first guess.
  size_t guess = compressed.size() * 4;
  if (compressed.size() >= 4) {
    const auto* t =
        reinterpret_cast<const unsigned char*>(compressed.data() + compressed.size() - 4);
    const uint32_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<uint32_t>(t[3]) << 24);
    // Trust it only within a plausible ratio: a truncated file ends in arbitrary bytes.
    guess = std::max<size_t>(guess, std::min<size_t>(isize, compressed.size() * 16));
  }
  std::string out(std::max<size_t>(guess, 1 << 16), '\0');
  size_t produced = 0, consumed = 0;
  int rc = Z_OK;
  while (true) {
    const size_t in_left = compressed.size() - consumed;
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + consumed));
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in_left, std::numeric_limits<uInt>::max()));
    if (produced == out.size()) out.resize(out.size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(&out[produced]);
    zs.avail_out = static_cast<uInt>(
        std::min<size_t>(out.size() - produced, std::numeric_limits<uInt>::max()));
    const uInt avail_in_before = zs.avail_in, avail_out_before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    consumed += avail_in_before - zs.avail_in;
    produced += avail_out_before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow; anything else (e.g. zero padding) ends the data.
      if (is_gzip(compressed.substr(consumed, 2))) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && consumed < compressed.size() && zs.avail_out == 0) continue;
    const std::string why = zs.msg != nullptr ? zs.msg : "unexpected end of data";
    inflateEnd(&zs);
    if (rc == Z_BUF_ERROR || consumed >= compressed.size()) {
      throw DataError("data file '" + path + "' is a truncated gzip stream (" + why +
                      "); reinstall the file or its package");
    }
    throw DataError("data file '" + path + "' is not a valid gzip stream (" + why + ")");
  }
  inflateEnd(&zs);
  out.resize(produced);
  return out;
}

}  // namespace slowpipe::models
