// Checked files: framing, CRC-32 (zlib) and atomic replacement by rename(2).
// The decoder checks in the order that gives the most useful message: magic,
// header size, header checksum, version, lengths against the file size, and
// only then the body checksum.
#include "models/torch/checked_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "common/errors.h"
#include "models/torch/internal/input_file.h"

namespace slowpipe::models {
namespace {

constexpr uint32_t kMaxKindBytes = 256;
constexpr uint32_t kMaxMetadataBytes = 16u << 20;

uint32_t crc_update(uint32_t crc, std::string_view bytes) {
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  size_t left = bytes.size();
  while (left > 0) {
    const auto n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = static_cast<uint32_t>(::crc32(crc, p, n));
    p += n;
    left -= n;
  }
  return crc;
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  }
  return v;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string file_label(const std::string& path) {
  return "file '" + path + "'";
}

struct Header {
  uint32_t version = 0;
  uint32_t kind_bytes = 0;
  uint32_t metadata_bytes = 0;
  uint64_t payload_bytes = 0;
  uint32_t body_crc = 0;
  uint64_t body_bytes() const {
    return uint64_t{kind_bytes} + metadata_bytes + payload_bytes;
  }
};

// Checks the first bytes of a file of `file_bytes` bytes. `head` holds
// min(file_bytes, 36) bytes.
Header parse_header(std::string_view head, uint64_t file_bytes, const std::string& path) {
  const std::string_view magic(kCheckedFileMagic, 8);
  if (file_bytes == 0) throw DataError(file_label(path) + " is empty, not a slowpipe file");
  const size_t n = std::min<size_t>(head.size(), 8);
  if (head.substr(0, n) != magic.substr(0, n)) {
    throw DataError(file_label(path) + " is not a slowpipe file (wrong magic number)");
  }
  if (file_bytes < kCheckedFileHeaderBytes) {
    throw DataError(file_label(path) + " is truncated inside its header (" +
                    std::to_string(file_bytes) + " bytes)");
  }
  const auto stored = static_cast<uint32_t>(get_le(head, 32, 4));
  const uint32_t computed = crc_update(0, head.substr(0, 32));
  if (stored != computed) {
    throw DataError(file_label(path) + " has a damaged header (checksum " + hex32(stored) +
                    ", computed " + hex32(computed) + ")");
  }
  Header h;
  h.version = static_cast<uint32_t>(get_le(head, 8, 4));
  h.kind_bytes = static_cast<uint32_t>(get_le(head, 12, 4));
  h.metadata_bytes = static_cast<uint32_t>(get_le(head, 16, 4));
  h.payload_bytes = get_le(head, 20, 8);
  h.body_crc = static_cast<uint32_t>(get_le(head, 28, 4));
  if (h.version != kCheckedFileVersion) {
    throw DataError(file_label(path) + " has format version " + std::to_string(h.version) +
                    "; this slowpipe reads version " + std::to_string(kCheckedFileVersion));
  }
  if (h.kind_bytes > kMaxKindBytes || h.metadata_bytes > kMaxMetadataBytes ||
      h.payload_bytes > (uint64_t{1} << 56)) {
    throw DataError(file_label(path) + " has a header announcing impossible lengths");
  }
  const uint64_t want = kCheckedFileHeaderBytes + h.body_bytes();
  if (file_bytes < want) {
    throw DataError(file_label(path) + " is truncated: " + std::to_string(file_bytes) +
                    " bytes, its header announces " + std::to_string(want));
  }
  if (file_bytes > want) {
    throw DataError(file_label(path) + " has " + std::to_string(file_bytes - want) +
                    " bytes after the end announced by its header (length mismatch)");
  }
  return h;
}

// RAII descriptor for writing the temporary file.
class OutFd {
 public:
  explicit OutFd(int fd) : fd_(fd) {}
  ~OutFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutFd(const OutFd&) = delete;
  OutFd& operator=(const OutFd&) = delete;
  int get() const { return fd_; }
  int release_and_close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

[[noreturn]] void io_failure(const std::string& what, const std::string& path,
                             const std::string& tmp, int err) {
  ::unlink(tmp.c_str());
  throw std::runtime_error("cannot write '" + path + "' (" + what + "): " + std::strerror(err));
}

}  // namespace

void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  OutFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    throw UsageError("cannot write '" + path + "': " + std::strerror(errno));
  }
  for (std::string_view piece : pieces) {
    while (!piece.empty()) {
      const ssize_t w = ::write(fd.get(), piece.data(), piece.size());
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) io_failure("write", path, tmp, errno);
      piece.remove_prefix(static_cast<size_t>(w));
    }
  }
  if (::fsync(fd.get()) != 0) io_failure("fsync", path, tmp, errno);
  if (fd.release_and_close() != 0) io_failure("close", path, tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) io_failure("rename", path, tmp, errno);
  // Make the rename itself durable.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // some file systems refuse fsync on directories: best effort
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, std::vector<std::string_view>{bytes});
}

std::string checked_file_header(const std::string& kind, const std::string& metadata,
                                std::string_view payload) {
  if (kind.size() > kMaxKindBytes || metadata.size() > kMaxMetadataBytes) {
    throw std::invalid_argument("checked file: kind or metadata too long");
  }
  uint32_t body_crc = crc_update(0, kind);
  body_crc = crc_update(body_crc, metadata);
  body_crc = crc_update(body_crc, payload);
  std::string h(kCheckedFileMagic, 8);
  put_le(h, kCheckedFileVersion, 4);
  put_le(h, kind.size(), 4);
  put_le(h, metadata.size(), 4);
  put_le(h, payload.size(), 8);
  put_le(h, body_crc, 4);
  put_le(h, crc_update(0, h), 4);
  return h + kind + metadata;
}

std::string encode_checked_file(const std::string& kind, const std::string& metadata,
                                std::string_view payload) {
  std::string out = checked_file_header(kind, metadata, payload);
  out.append(payload.data(), payload.size());
  return out;
}

void write_checked_file(const std::string& path, const std::string& kind,
                        const std::string& metadata, std::string_view payload) {
  const std::string header = checked_file_header(kind, metadata, payload);
  write_file_atomic(path, std::vector<std::string_view>{header, payload});
}

CheckedFile decode_checked_file(std::string bytes, const std::string& path) {
  const Header h = parse_header(bytes, bytes.size(), path);
  const std::string_view body = std::string_view(bytes).substr(kCheckedFileHeaderBytes);
  const uint32_t computed = crc_update(0, body);
  if (computed != h.body_crc) {
    throw DataError(file_label(path) + ": checksum mismatch, the contents are damaged (stored " +
                    hex32(h.body_crc) + ", computed " + hex32(computed) + ")");
  }
  CheckedFile out;
  out.kind = std::string(body.substr(0, h.kind_bytes));
  out.metadata = std::string(body.substr(h.kind_bytes, h.metadata_bytes));
  // The payload keeps the buffer: drop the prefix in place instead of copying.
  bytes.erase(0, kCheckedFileHeaderBytes + h.kind_bytes + h.metadata_bytes);
  out.payload = std::move(bytes);
  return out;
}

CheckedFile read_checked_file(const std::string& path, const std::string& key) {
  uint64_t size = 0;
  const std::string head = read_input_prefix(path, key, kCheckedFileHeaderBytes, &size);
  parse_header(head, size, path);  // sizes are checked before the body is allocated
  return decode_checked_file(read_input_file(path, key, size), path);
}

CheckedFile read_checked_file(const std::string& path, const std::string& key,
                              const std::string& expected_kind) {
  CheckedFile f = read_checked_file(path, key);
  if (f.kind != expected_kind) {
    throw UsageError((key.empty() ? "" : key + ": ") + file_label(path) + " holds a '" + f.kind +
                     "', not a '" + expected_kind + "'");
  }
  return f;
}

CheckedFile read_checked_file_header(const std::string& path, const std::string& key) {
  uint64_t size = 0;
  std::string head = read_input_prefix(path, key, kCheckedFileHeaderBytes, &size);
  const Header h = parse_header(head, size, path);
  head = read_input_prefix(path, key,
                           kCheckedFileHeaderBytes + h.kind_bytes + h.metadata_bytes, &size);
  CheckedFile out;
  out.kind = head.substr(kCheckedFileHeaderBytes, h.kind_bytes);
  out.metadata = head.substr(kCheckedFileHeaderBytes + h.kind_bytes, h.metadata_bytes);
  return out;
}

}  // namespace slowpipe::models
