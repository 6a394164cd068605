// Whole-file reads (checked first, see models/torch/internal/input_file.h) and in-memory gzip
// inflation (zlib's inflate with gzip framing, so CRC-32 and length trailers are
// checked) into a buffer that never grows past the limit. Multi-member streams
// are concatenated, as gzip(1) does.
#include "models/torch/internal/file_bytes.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "common/errors.h"
#include "common/units.h"
#include "models/torch/internal/input_file.h"

namespace slowpipe::models {

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string read_file_bytes(const std::string& path, const std::string& debian_package,
                            const std::string& key, uint64_t max_bytes) {
  const uint64_t limit = max_bytes > 0 ? max_bytes : default_input_limit_bytes();
  std::string bytes = read_input_file(path, key, limit, debian_package);
  return is_gzip(bytes) ? gunzip(bytes, path, limit, key) : bytes;
}

namespace {

// Inflates at most `cap` bytes. `prefix_only`: return what fits in `cap`;
// otherwise reaching `cap` means the stream is larger than `cap - 1` bytes.
// Returns {bytes, true when stopped at cap}.
std::pair<std::string, bool> inflate_gzip(const std::string& compressed, const std::string& path,
                                          uint64_t cap) {
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
  std::string out(static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(guess, 1 << 16), cap)),
                  '\0');
  size_t produced = 0, consumed = 0;
  int rc = Z_OK;
  while (true) {
    if (produced == out.size()) {
      if (out.size() >= cap) {  // stopped before inflating the rest
        inflateEnd(&zs);
        return {std::move(out), true};
      }
      out.resize(static_cast<size_t>(std::min<uint64_t>(uint64_t{out.size()} * 2, cap)));
    }
    const size_t in_left = compressed.size() - consumed;
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + consumed));
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in_left, std::numeric_limits<uInt>::max()));
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
  return {std::move(out), false};
}

}  // namespace

std::string gunzip(const std::string& compressed, const std::string& path, uint64_t max_bytes,
                   const std::string& key) {
  const uint64_t limit = max_bytes > 0 ? max_bytes : default_input_limit_bytes();
  auto [out, stopped] = inflate_gzip(compressed, path, limit + 1);
  if (stopped) {
    throw UsageError((key.empty() ? "" : key + ": ") + "file '" + path +
                     "' inflates to more than " + format_bytes(static_cast<double>(limit)) +
                     ", more than slowpipe can hold from one input file on this machine");
  }
  return std::move(out);
}

std::string gunzip_prefix(const std::string& compressed, const std::string& path, size_t n) {
  if (n == 0) return "";
  return inflate_gzip(compressed, path, n).first;
}

}  // namespace slowpipe::models
