// Token windows kept as uint16 (two bytes a token); batches gather rows and
// widen them to int64.
#include "models/torch/internal/token_dataset.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "common/errors.h"
#include "models/torch/internal/token_shards.h"
#include "models/torch/internal/window_split.h"

namespace slowpipe::models {
namespace {

// Every shard `pattern` matches, in sorted order, as one stream.
std::vector<uint16_t> read_stream(const std::vector<std::string>& files, int64_t vocab) {
  std::vector<uint16_t> stream;
  for (const auto& f : files) {
    const std::vector<uint16_t> tokens = read_token_shard(f, vocab, "data.path");
    stream.insert(stream.end(), tokens.begin(), tokens.end());
  }
  return stream;
}

}  // namespace

TokenDataset::TokenDataset(const std::string& pattern, const DataConfig& cfg, int64_t seq_len,
                           int64_t vocab)
    : seq_len_(seq_len) {
  if (seq_len < 1) throw UsageError("token windows need seq_len >= 1 (model.seq_len)");
  if (vocab < 1) {
    throw UsageError(
        "data.name=tokens needs a language model (model.name): this model has no "
        "vocabulary to read token ids against");
  }
  const std::vector<std::string> files = match_shards(pattern, "data.path");
  const std::vector<uint16_t> stream = read_stream(files, vocab);
  const WindowSplit split = split_windows(
      static_cast<int64_t>(stream.size()), cfg, seq_len, [&](int64_t units, int64_t w) {
        return "data.path: the token shards matching '" + pattern + "' hold " +
               std::to_string(units) + " tokens in the range [" + std::to_string(cfg.begin) + ", " +
               std::to_string(cfg.end) +
               "), too few for a training window of model.seq_len+1 = " + std::to_string(w) +
               " tokens";
      });
  n_train_ = split.n_train;
  n_val_ = split.n_val;
  first_token_ = split.first;
  val_first_window_ = split.val_first_window;
  const int64_t w = seq_len + 1, lo = split.first;

  const auto* src = stream.data() + lo;
  windows_.assign(src, src + n_train_ * w);
  windows_.insert(windows_.end(), src + val_first_window_ * w,
                  src + (val_first_window_ + n_val_) * w);

  info_.name = "tokens";
  info_.task = Task::kLanguageModel;
  info_.sample_shape = {seq_len};
  info_.num_classes = vocab;
  info_.source =
      pattern + " (" + std::to_string(files.size()) + (files.size() == 1 ? " file)" : " files)");
}

int64_t TokenDataset::size(Split split) const {
  return split == Split::kTrain ? n_train_ : n_val_;
}

int64_t TokenDataset::token_offset(Split split, int64_t index) const {
  const int64_t window = split == Split::kTrain ? index : val_first_window_ + index;
  return first_token_ + window * (seq_len_ + 1);
}

Batch TokenDataset::get(Split split, const std::vector<int64_t>& indices) const {
  const int64_t n = size(split);
  const int64_t row0 = split == Split::kTrain ? 0 : n_train_;
  const int64_t w = seq_len_ + 1;
  const auto b_count = static_cast<int64_t>(indices.size());
  Batch b;
  b.ids = torch::tensor(indices, torch::kLong);                 // [B]
  b.inputs = torch::empty({b_count, seq_len_}, torch::kLong);   // [B, T]
  b.targets = torch::empty({b_count, seq_len_}, torch::kLong);  // [B, T]
  auto* in = b.inputs.data_ptr<int64_t>();
  auto* tg = b.targets.data_ptr<int64_t>();
  for (int64_t r = 0; r < b_count; ++r) {
    const int64_t i = indices[static_cast<size_t>(r)];
    if (i < 0 || i >= n) {
      throw std::out_of_range("sample index " + std::to_string(i) + " outside [0, " +
                              std::to_string(n) + ") of data set '" + info_.name + "'");
    }
    const uint16_t* row = windows_.data() + (row0 + i) * w;  // T + 1 tokens
    std::copy(row, row + seq_len_, in + r * seq_len_);
    std::copy(row + 1, row + w, tg + r * seq_len_);
  }
  return b;
}

}  // namespace slowpipe::models
