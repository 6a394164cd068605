// Reading token shards (see token_shards.h): the header first, then exactly
// the tokens it announces, decoded little-endian whatever the host's order.
#include "models/torch/internal/token_shards.h"

#include <glob.h>

#include <algorithm>

#include "common/errors.h"
#include "models/torch/internal/input_file.h"

namespace slowpipe::models {
namespace {

// Little-endian int32 word `i` of the header.
int32_t header_word(const std::string& header, size_t i) {
  uint32_t v = 0;
  for (size_t b = 0; b < 4; ++b)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(header[4 * i + b])) << (8 * b);
  return static_cast<int32_t>(v);
}

std::string shard_label(const std::string& path) {
  return "token shard '" + path + "'";
}

// Frees a glob_t on every path out.
struct GlobResult {
  glob_t g{};
  ~GlobResult() { globfree(&g); }
};

}  // namespace

std::vector<std::string> match_shards(const std::string& pattern, const std::string& key) {
  GlobResult r;
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &r.g);
  if (rc == GLOB_NOMATCH || (rc == 0 && r.g.gl_pathc == 0)) {
    throw UsageError(key + ": no file matches '" + pattern + "'");
  }
  if (rc != 0) {
    throw UsageError(key + ": cannot list the files matching '" + pattern + "'" +
                     (rc == GLOB_NOSPACE ? " (out of memory)" : " (a folder cannot be read)"));
  }
  std::vector<std::string> files(r.g.gl_pathv, r.g.gl_pathv + r.g.gl_pathc);
  std::sort(files.begin(), files.end());  // byte order, whatever the locale
  return files;
}

int64_t shard_token_count(const std::string& header, const std::string& path) {
  if (header.size() < kShardHeaderBytes) {
    throw UsageError(shard_label(path) + " holds " + std::to_string(header.size()) +
                    " bytes, fewer than its " + std::to_string(kShardHeaderBytes) + "-byte header");
  }
  const int32_t magic = header_word(header, 0);
  if (magic != kShardMagic) {
    throw UsageError(shard_label(path) + ": magic number " + std::to_string(magic) + ", not " +
                    std::to_string(kShardMagic) + " (not a train_gpt.py .bin token shard)");
  }
  const int32_t version = header_word(header, 1);
  if (version != kShardVersion) {
    throw UsageError(shard_label(path) + ": version " + std::to_string(version) +
                    "; slowpipe reads version " + std::to_string(kShardVersion) + " only");
  }
  const int32_t count = header_word(header, 2);
  if (count < 0) {
    throw UsageError(shard_label(path) + ": its header announces " + std::to_string(count) +
                    " tokens");
  }
  return count;
}

std::vector<uint16_t> read_token_shard(const std::string& path, int64_t vocab,
                                       const std::string& key) {
  uint64_t file_bytes = 0;
  const int64_t n =
      shard_token_count(read_input_prefix(path, key, kShardHeaderBytes, &file_bytes), path);
  const uint64_t need_bytes = kShardHeaderBytes + kShardTokenBytes * static_cast<uint64_t>(n);
  if (file_bytes < need_bytes) {
    throw UsageError(shard_label(path) + " is truncated: its header announces " + std::to_string(n) +
                    " tokens, the file holds " +
                    std::to_string((file_bytes - kShardHeaderBytes) / kShardTokenBytes));
  }
  const std::string bytes = read_input_file(path, key, default_input_limit_bytes());
  if (bytes.size() < need_bytes) {  // shrank between the two reads
    throw UsageError(shard_label(path) + " is truncated: it shrank while being read");
  }
  std::vector<uint16_t> tokens(static_cast<size_t>(n));
  const auto* src = reinterpret_cast<const uint8_t*>(bytes.data()) + kShardHeaderBytes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto id = static_cast<uint16_t>(src[2 * i] | (src[2 * i + 1] << 8));
    if (id >= vocab) {
      throw UsageError(key + ": " + shard_label(path) + ": token " + std::to_string(id) +
                       " at position " + std::to_string(i) +
                       " is outside the model's vocabulary of " + std::to_string(vocab) +
                       " (ids 0.." + std::to_string(vocab - 1) + ")");
    }
    tokens[i] = id;
  }
  return tokens;
}

}  // namespace slowpipe::models
