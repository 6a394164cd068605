// The token shards that Protocol NanoGPT and modded-nanogpt train on (their
// `train_gpt.py`, `_load_data_shard`; docs/models.md, "Token shards"): a
// header of 256 little-endian int32 words - word 0 the magic number 20240520,
// word 1 the version 1, word 2 the number of tokens n - then n little-endian
// uint16 token ids. Bytes past the n tokens are not read, as the reference
// reader does not read them. Plain C++ (no libtorch); the data set built on it
// is models/token_dataset.h.
//
// Refusals (one line each, naming the option, the file and the position):
// no file matching the glob, a token at or above the model's vocabulary:
// UsageError (exit 2); a short header, a wrong magic number or version, fewer
// tokens than the header announces: DataError (exit 3), as for every other
// input whose content is unusable (docs/bad-input.md). Leaves out the
// tokenizer: ids are read as they are, the model gives their vocabulary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace slowpipe::models {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;
constexpr size_t kShardHeaderWords = 256;
constexpr size_t kShardHeaderBytes = kShardHeaderWords * 4;  // 1,024
constexpr size_t kShardTokenBytes = 2;                       // one uint16 id

// The paths `pattern` (a glob(3) pattern: *, ?, [...]) matches, sorted by
// path (byte order) as the reference loader sorts them. UsageError naming
// `key` and the pattern when none matches. Each is checked when it is read
// (check_input_file: a directory or a device that matches is refused there).
std::vector<std::string> match_shards(const std::string& pattern, const std::string& key);

// The number of tokens a shard's header announces. `header` holds the file's
// first bytes (at most kShardHeaderBytes are looked at). DataError naming
// `path` for a header shorter than 1,024 bytes, a wrong magic number, a
// version other than 1 or a negative count.
int64_t shard_token_count(const std::string& header, const std::string& path);

// One shard's tokens, exactly as many as its header announces. DataError as
// shard_token_count, and for a file holding fewer tokens than announced;
// UsageError naming `key`, the file and the token's position for a token id
// >= `vocab` (the model's vocabulary size, > 0).
std::vector<uint16_t> read_token_shard(const std::string& path, int64_t vocab,
                                       const std::string& key = "data.path");

}  // namespace slowpipe::models
