// Byte windows in one uint8 tensor; batches gather rows and widen to int64.
#include "models/torch/internal/text_dataset.h"

#include <torch/torch.h>

#include <cstring>
#include <stdexcept>

#include "common/errors.h"
#include "models/torch/internal/window_split.h"

namespace slowpipe::models {

TextDataset::TextDataset(const std::string& name, const std::string& source,
                         const std::string& bytes, const DataConfig& cfg, int64_t seq_len)
    : seq_len_(seq_len) {
  if (seq_len < 1) throw UsageError("text windows need seq_len >= 1 (model.seq_len)");
  const WindowSplit split = split_windows(
      static_cast<int64_t>(bytes.size()), cfg, seq_len, [&](int64_t units, int64_t w) {
        return "text file '" + source + "': the range [" + std::to_string(cfg.begin) + ", " +
               std::to_string(cfg.end) + ") holds " + std::to_string(units) +
               " bytes, too few for a training window of model.seq_len+1 = " + std::to_string(w) +
               " bytes";
      });
  n_train_ = split.n_train;
  n_val_ = split.n_val;
  first_byte_ = split.first;
  val_first_window_ = split.val_first_window;
  const int64_t w = seq_len + 1, lo = split.first;

  windows_ = torch::empty({n_train_ + n_val_, w}, torch::kUInt8);  // [N, T+1]
  auto* dst = windows_.data_ptr<uint8_t>();
  const auto* src = reinterpret_cast<const uint8_t*>(bytes.data()) + lo;
  std::memcpy(dst, src, static_cast<size_t>(n_train_ * w));
  std::memcpy(dst + n_train_ * w, src + val_first_window_ * w, static_cast<size_t>(n_val_ * w));

  info_.name = name;
  info_.task = Task::kLanguageModel;
  info_.sample_shape = {seq_len};
  info_.num_classes = 256;
  info_.source = source;
}

int64_t TextDataset::size(Split split) const {
  return split == Split::kTrain ? n_train_ : n_val_;
}

int64_t TextDataset::byte_offset(Split split, int64_t index) const {
  const int64_t window = split == Split::kTrain ? index : val_first_window_ + index;
  return first_byte_ + window * (seq_len_ + 1);
}

Batch TextDataset::get(Split split, const std::vector<int64_t>& indices) const {
  const int64_t n = size(split);
  const int64_t row0 = split == Split::kTrain ? 0 : n_train_;
  std::vector<int64_t> rows;
  rows.reserve(indices.size());
  for (int64_t i : indices) {
    if (i < 0 || i >= n) {
      throw std::out_of_range("sample index " + std::to_string(i) + " outside [0, " +
                              std::to_string(n) + ") of data set '" + info_.name + "'");
    }
    rows.push_back(row0 + i);
  }
  Batch b;
  b.ids = torch::tensor(indices, torch::kLong);  // [B]
  auto w =
      windows_.index_select(0, torch::tensor(rows, torch::kLong)).to(torch::kLong);  // [B, T+1]
  b.inputs = w.slice(1, 0, seq_len_).contiguous();                                   // [B, T]
  b.targets = w.slice(1, 1, seq_len_ + 1).contiguous();                              // [B, T]
  return b;
}

}  // namespace slowpipe::models
