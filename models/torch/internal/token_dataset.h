// Token shards (models/token_shards.h: Protocol NanoGPT's and modded-nanogpt's
// `.bin` files) as a language-modelling data set, `data.name = tokens`, cut as
// the byte-level text data set is (models/text_dataset.h), in tokens:
//
// The shards data.path matches, in sorted path order, are read one after the
// other as one stream of N tokens. Its selected range [begin*N, end*N) is cut
// into non-overlapping windows of seq_len+1 tokens (a trailing partial window
// is dropped; a window may span the end of one shard and the start of the
// next). A window's inputs are its first seq_len tokens, its targets the same
// tokens shifted by one. The last val_fraction of the windows (at least one
// when val_fraction > 0 and there are two or more) form the validation split,
// the others the training split; a sample's id is its window's index within
// its split. The vocabulary is the model's: a token at or above it is refused.
//
// Left out: the reference loader's batches of consecutive sequences that share
// their boundary token (stride seq_len), and its separate validation files.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/facts/data_config.h"
#include "models/torch/dataset.h"

namespace slowpipe::models {

class TokenDataset : public Dataset {
 public:
  // `pattern`: the glob of shards (data.path); `vocab`: the model's vocabulary
  // size (0: the model has none, refused). Uses cfg.begin, cfg.end,
  // cfg.val_fraction, cfg.limit, cfg.val_limit. Throws as read_token_shard
  // does, and UsageError when the range holds no training window.
  TokenDataset(const std::string& pattern, const DataConfig& cfg, int64_t seq_len, int64_t vocab);

  DatasetInfo info() const override { return info_; }
  int64_t size(Split split) const override;
  // inputs int64 [B, T], targets int64 [B, T], ids int64 [B].
  Batch get(Split split, const std::vector<int64_t>& indices) const override;

  // Offset in the token stream of the first token of a sample (for tests/tools).
  int64_t token_offset(Split split, int64_t index) const;

 private:
  DatasetInfo info_;
  int64_t seq_len_ = 0;
  int64_t first_token_ = 0;  // stream offset of window 0
  int64_t n_train_ = 0, n_val_ = 0;
  int64_t val_first_window_ = 0;
  std::vector<uint16_t> windows_;  // [n_train + n_val, T + 1]: train rows, then validation rows
};

}  // namespace slowpipe::models
