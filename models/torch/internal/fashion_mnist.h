// Fashion-MNIST (Xiao, Rasul, Vollgraf 2017): 28x28 grey images of clothing in
// 10 classes, read from the IDX files of the Debian package
// dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
//
// Training split: the 60 000 images of train-*-ubyte.gz (restricted to
// [begin, end) and to `limit`); validation split: the 10 000 images of
// t10k-*-ubyte.gz (restricted to `val_limit`). A sample's id is its index within
// its split. Images are normalised with the training set's mean 0.2860 and
// standard deviation 0.3530. Left out: augmentation.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

#include "models/facts/data_config.h"
#include "models/facts/data_facts.h"  // kFashionMnistDir, kFashionMnistPackage
#include "models/torch/dataset.h"

namespace slowpipe::models {

class FashionMnist : public Dataset {
 public:
  // Reads the four files under `dir`. Throws UsageError for a missing file
  // (naming the Debian package), DataError for a corrupt one.
  FashionMnist(const std::string& dir, const DataConfig& cfg);

  DatasetInfo info() const override { return info_; }
  int64_t size(Split split) const override;
  // inputs float [B, 1, 28, 28], targets int64 [B], ids int64 [B].
  Batch get(Split split, const std::vector<int64_t>& indices) const override;

 private:
  DatasetInfo info_;
  at::Tensor train_images_, val_images_;  // uint8 [N, 28, 28]
  at::Tensor train_labels_, val_labels_;  // int64 [N]
};

}  // namespace slowpipe::models
