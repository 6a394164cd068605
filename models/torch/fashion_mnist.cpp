// Fashion-MNIST: IDX images and labels kept as uint8 in memory (47 MB for the
// training split), normalised to float per batch.
#include "models/torch/internal/fashion_mnist.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "common/errors.h"
#include "models/torch/internal/idx.h"
#include "models/torch/internal/input_file.h"

namespace slowpipe::models {
namespace {

constexpr double kMean = 0.2860;
constexpr double kStd = 0.3530;
constexpr int64_t kSide = 28;
constexpr int64_t kClasses = 10;

struct Split2 {
  at::Tensor images;  // uint8 [N, 28, 28]
  at::Tensor labels;  // int64 [N]
};

Split2 load_pair(const std::string& dir, const std::string& prefix, const std::string& key) {
  const std::string img_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string lab_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  IdxArray img = read_idx(img_path, 3, kFashionMnistPackage, key);
  IdxArray lab = read_idx(lab_path, 1, kFashionMnistPackage, key);
  if (img.dims[1] != kSide || img.dims[2] != kSide) {
    throw DataError("IDX file '" + img_path + "' holds " + std::to_string(img.dims[1]) + "x" +
                    std::to_string(img.dims[2]) + " images, expected 28x28");
  }
  if (img.dims[0] != lab.dims[0]) {
    throw DataError("size mismatch: '" + img_path + "' holds " + std::to_string(img.dims[0]) +
                    " images but '" + lab_path + "' holds " + std::to_string(lab.dims[0]) +
                    " labels");
  }
  Split2 s;
  s.images = torch::from_blob(img.data.data(), {img.dims[0], kSide, kSide}, torch::kUInt8).clone();
  s.labels = torch::from_blob(lab.data.data(), {lab.dims[0]}, torch::kUInt8).to(torch::kLong);
  if (s.labels.numel() > 0 && s.labels.max().item<int64_t>() >= kClasses) {
    throw DataError("IDX file '" + lab_path + "' holds a label outside 0..9");
  }
  return s;
}

}  // namespace

FashionMnist::FashionMnist(const std::string& dir, const DataConfig& cfg) {
  if (!(cfg.begin >= 0.0 && cfg.begin < cfg.end && cfg.end <= 1.0)) {
    throw UsageError("data.begin and data.end must satisfy 0 <= begin < end <= 1");
  }
  const std::string key = cfg.path.empty() ? "data.name=fashion-mnist (default directory)"
                                           : "data.path";
  check_input_dir(dir, key);
  Split2 train = load_pair(dir, "train", key);
  Split2 val = load_pair(dir, "t10k", key);
  const int64_t n = train.images.size(0);
  const auto lo = static_cast<int64_t>(std::floor(cfg.begin * static_cast<double>(n)));
  int64_t hi = static_cast<int64_t>(std::floor(cfg.end * static_cast<double>(n)));
  if (cfg.limit > 0) hi = std::min(hi, lo + cfg.limit);
  if (hi <= lo) {
    throw UsageError("data.begin/data.end select no training image of '" + dir + "'");
  }
  train_images_ = train.images.slice(0, lo, hi).contiguous();
  train_labels_ = train.labels.slice(0, lo, hi).contiguous();
  const int64_t n_val =
      cfg.val_limit > 0 ? std::min(cfg.val_limit, val.images.size(0)) : val.images.size(0);
  val_images_ = val.images.slice(0, 0, n_val).contiguous();
  val_labels_ = val.labels.slice(0, 0, n_val).contiguous();

  info_.name = "fashion-mnist";
  info_.task = Task::kClassification;
  info_.sample_shape = {1, kSide, kSide};
  info_.num_classes = kClasses;
  info_.source = dir;
}

int64_t FashionMnist::size(Split split) const {
  return (split == Split::kTrain ? train_labels_ : val_labels_).size(0);
}

Batch FashionMnist::get(Split split, const std::vector<int64_t>& indices) const {
  const int64_t n = size(split);
  for (int64_t i : indices) {
    if (i < 0 || i >= n) {
      throw std::out_of_range("sample index " + std::to_string(i) + " outside [0, " +
                              std::to_string(n) + ") of data set 'fashion-mnist'");
    }
  }
  const auto& images = split == Split::kTrain ? train_images_ : val_images_;
  const auto& labels = split == Split::kTrain ? train_labels_ : val_labels_;
  Batch b;
  b.ids = torch::tensor(indices, torch::kLong);  // [B]
  b.inputs = images.index_select(0, b.ids)
                 .to(torch::kFloat)
                 .div_(255.0)
                 .sub_(kMean)
                 .div_(kStd)
                 .unsqueeze(1);               // [B, 1, 28, 28]
  b.targets = labels.index_select(0, b.ids);  // [B]
  return b;
}

}  // namespace slowpipe::models
