// Checked files: a small container that turns a damaged file into an error
// instead of data, written atomically so that a kill mid-write never leaves a
// damaged file behind. Model checkpoints (models/torch/checkpoint.h) and the trainer's
// resume checkpoints use it; any module may.
//
// Layout (integers little-endian):
//   offset  bytes  field
//        0      8  magic "SLOWPIPE"
//        8      4  format version (kCheckedFileVersion)
//       12      4  K: length of the kind string (at most 256)
//       16      4  M: length of the metadata string (at most 16 MiB)
//       20      8  P: length of the payload
//       28      4  CRC-32 (zlib's crc32) of kind + metadata + payload
//       32      4  CRC-32 of bytes 0..31 (the header itself)
//       36      K  kind: what the file holds ("slowpipe.model", ...)
//     36+K      M  metadata: a small caller-defined string (JSON for checkpoints)
//   36+K+M      P  payload: caller-defined bytes (a libtorch archive for checkpoints)
// The file ends exactly after the payload. CRC-32 detects every burst of up to
// 32 flipped bits and any other random damage with probability 1 - 2^-32; it is
// no defence against deliberate tampering.
//
// Atomic writes: the bytes go to `<path>.tmp.<pid>`, which is fsync'ed, renamed
// over `path`, and the directory fsync'ed. A reader sees the old file or the new
// one, never a mix; a kill can leave a stale `.tmp.<pid>` file beside it.
// Left out: concurrent writers of one path within one process, compression.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace slowpipe::models {

constexpr uint32_t kCheckedFileVersion = 1;
constexpr const char* kCheckedFileMagic = "SLOWPIPE";  // 8 bytes, no terminator in the file
constexpr size_t kCheckedFileHeaderBytes = 36;

struct CheckedFile {
  std::string kind;      // e.g. "slowpipe.model"
  std::string metadata;  // e.g. a JSON object
  std::string payload;
};

// Writes `bytes` to `path` atomically (see above). Throws UsageError naming the
// file when it cannot be created (missing directory, no permission) and
// std::runtime_error naming it for a later I/O failure (disk full); in both
// cases `path` is left as it was and the temporary file is removed.
void write_file_atomic(const std::string& path, const std::string& bytes);
// The same for bytes given in pieces, written one after the other (no copy).
void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces);

// The header for `kind`, `metadata` and `payload` (36 bytes + kind + metadata);
// the file is this header followed by the payload.
std::string checked_file_header(const std::string& kind, const std::string& metadata,
                                std::string_view payload);
// The whole file in memory: header + payload.
std::string encode_checked_file(const std::string& kind, const std::string& metadata,
                                std::string_view payload);
// write_file_atomic(path, header + payload).
void write_checked_file(const std::string& path, const std::string& kind,
                        const std::string& metadata, std::string_view payload);

// Decodes a whole file held in memory (`path` is for messages). Throws
// DataError naming `path` for: an empty file, a wrong magic ("not a slowpipe
// file"), a truncated header or body, a damaged header, a newer format version,
// bytes after the announced end, or a checksum mismatch.
CheckedFile decode_checked_file(std::string bytes, const std::string& path);

// Reads and decodes `path`. Before reading, a missing, unreadable or
// non-regular file (directory, device, FIFO) is a UsageError naming the file
// and `key` (the option the path came from; may be empty); the file's size is
// checked against its header before the body is allocated. Errors in the
// contents are DataErrors as for decode_checked_file.
CheckedFile read_checked_file(const std::string& path, const std::string& key = "");
// The same, and a kind other than `expected_kind` is a UsageError naming both.
CheckedFile read_checked_file(const std::string& path, const std::string& key,
                              const std::string& expected_kind);

// Kind and metadata only (payload left empty), reading just the header and the
// two strings: the header's own checksum and the file size are checked, the
// body's checksum is not (read_checked_file checks it). For cheap up-front
// validation (e.g. comparing a checkpoint's config before loading any data).
CheckedFile read_checked_file_header(const std::string& path, const std::string& key = "");

}  // namespace slowpipe::models
