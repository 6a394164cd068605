// Byte-level text as a language-modelling data set (vocabulary 256: raw bytes,
// no tokenizer), as used for GCIDE (dict-gcide) and any text file.
//
// The selected byte range [begin*N, end*N) of the corpus is cut into
// non-overlapping windows of seq_len+1 bytes (a trailing partial window is
// dropped). A window's inputs are its first seq_len bytes, its targets the same
// bytes shifted by one. The last val_fraction of the windows (at least one when
// val_fraction > 0 and there are two or more) form the validation split, the
// others the training split; a sample's id is its window's index within its
// split. The split is a pure function of the bytes and the config.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

#include "models/facts/data_config.h"
#include "models/torch/dataset.h"

namespace slowpipe::models {

class TextDataset : public Dataset {
 public:
  // `bytes`: the whole (inflated) corpus; `source`: its file, for messages.
  // Uses cfg.begin, cfg.end, cfg.val_fraction, cfg.limit, cfg.val_limit.
  // Throws UsageError when the selected range holds no training window.
  TextDataset(const std::string& name, const std::string& source, const std::string& bytes,
              const DataConfig& cfg, int64_t seq_len);

  DatasetInfo info() const override { return info_; }
  int64_t size(Split split) const override;
  // inputs int64 [B, T], targets int64 [B, T], ids int64 [B].
  Batch get(Split split, const std::vector<int64_t>& indices) const override;

  // Byte offset in the corpus of the first byte of a sample (for tests/tools).
  int64_t byte_offset(Split split, int64_t index) const;

 private:
  DatasetInfo info_;
  int64_t seq_len_ = 0;
  int64_t first_byte_ = 0;  // corpus offset of window 0
  int64_t n_train_ = 0, n_val_ = 0;
  int64_t val_first_window_ = 0;
  at::Tensor windows_;  // uint8 [n_train + n_val, T + 1]: train rows, then validation rows
};

}  // namespace slowpipe::models
