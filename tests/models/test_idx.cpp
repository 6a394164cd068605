// IDX / gzip / Fashion-MNIST loader tests: the real files of the Debian package,
// and broken files written to temp files (truncated gzip, wrong magic, size
// mismatch, missing file).
#include <torch/torch.h>
#include <zlib.h>

#include <catch2/catch.hpp>

#include "common/errors.h"
#include "matchers.h"
#include "models/torch/data_registry.h"
#include "models/torch/internal/fashion_mnist.h"
#include "models/torch/internal/file_bytes.h"
#include "models/torch/internal/idx.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
using slowpipe::models::testing::WhatContains;
using sm::testing::TempFile;

namespace {

const std::string kDir = sm::kFashionMnistDir;

// Reference decoder for the differential test: zlib's own gzread.
std::string gzread_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}


}  // namespace

TEST_CASE("gunzip: matches zlib's gzread on the real Fashion-MNIST files") {
  for (const char* name : {"t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"}) {
    const std::string path = kDir + "/" + name;
    CHECK(sm::read_file_bytes(path) == gzread_all(path));
  }
}

TEST_CASE("gunzip: multi-member streams concatenate; plain files pass through") {
  const std::string a(5000, 'a'), b = "second member";
  CHECK(sm::gunzip(sm::testing::gzip_bytes(a) + sm::testing::gzip_bytes(b), "mem") == a + b);
  TempFile plain(".txt");
  plain.write("not compressed\n");
  CHECK(sm::read_file_bytes(plain.path()) == "not compressed\n");
}

TEST_CASE("IDX: the real Fashion-MNIST files parse with the documented shapes") {
  auto labels = sm::read_idx(kDir + "/t10k-labels-idx1-ubyte.gz", 1, "");
  REQUIRE(labels.dims == std::vector<int64_t>{10000});
  auto images = sm::read_idx(kDir + "/t10k-images-idx3-ubyte.gz", 3, "");
  REQUIRE(images.dims == std::vector<int64_t>{10000, 28, 28});
  REQUIRE(images.data.size() == 10000u * 28 * 28);
  // Every class appears 1000 times in the test file.
  std::vector<int> count(10, 0);
  for (unsigned char c : labels.data) count.at(c)++;
  for (int c : count) CHECK(c == 1000);
}

TEST_CASE("FashionMnist: splits, ids, normalisation") {
  sm::DataConfig cfg;
  cfg.name = "fashion-mnist";
  cfg.limit = 1000;
  cfg.val_limit = 500;
  auto ds = sm::make_dataset(cfg, 0);
  CHECK(ds->size(sm::Split::kTrain) == 1000);
  CHECK(ds->size(sm::Split::kValidation) == 500);
  const auto info = ds->info();
  CHECK(info.task == sm::Task::kClassification);
  CHECK(info.sample_shape == std::vector<int64_t>{1, 28, 28});
  CHECK(info.num_classes == 10);

  auto batch = ds->get(sm::Split::kValidation, {3, 0, 499});
  CHECK(batch.inputs.sizes() == at::IntArrayRef({3, 1, 28, 28}));
  CHECK(batch.targets.sizes() == at::IntArrayRef({3}));
  CHECK(batch.ids.equal(torch::tensor({3, 0, 499}, torch::kLong)));
  CHECK(batch.size() == 3);
  // Differential: validation sample 3 is image 3 of t10k, normalised by hand.
  auto raw = sm::read_idx(kDir + "/t10k-images-idx3-ubyte.gz", 3, "");
  auto lab = sm::read_idx(kDir + "/t10k-labels-idx1-ubyte.gz", 1, "");
  for (int p : {0, 100, 400, 783}) {
    const double px = static_cast<unsigned char>(raw.data[3 * 784 + p]);
    CHECK(batch.inputs[0][0][p / 28][p % 28].item<float>() ==
          Approx((px / 255.0 - 0.2860) / 0.3530).epsilon(1e-5));
  }
  CHECK(batch.targets[0].item<int64_t>() == static_cast<unsigned char>(lab.data[3]));

  // begin/end select a later slice of the training file; ids restart at 0.
  sm::DataConfig tail = cfg;
  tail.limit = 0;
  tail.begin = 0.5;
  auto ds_tail = sm::make_dataset(tail, 0);
  CHECK(ds_tail->size(sm::Split::kTrain) == 30000);
  auto full = sm::make_dataset(sm::DataConfig{"fashion-mnist", "", 0.1, 0, 1, 0, 1}, 0);
  CHECK(full->size(sm::Split::kTrain) == 60000);
  CHECK(ds_tail->get(sm::Split::kTrain, {0})
            .inputs.equal(full->get(sm::Split::kTrain, {30000}).inputs));
  CHECK_THROWS_AS(ds->get(sm::Split::kTrain, {1000}), std::out_of_range);
}

TEST_CASE("Errors: missing, truncated and corrupt files name the file") {
  SECTION("missing file names the Debian package") {
    sm::DataConfig cfg;
    cfg.name = "fashion-mnist";
    cfg.path = "/nonexistent/fashion";
    CHECK_THROWS_MATCHES(sm::make_dataset(cfg, 0), slowpipe::UsageError,
                         WhatContains("/nonexistent/fashion/train-images-idx3-ubyte.gz") &&
                             WhatContains("dataset-fashion-mnist"));
    CHECK_THROWS_MATCHES(sm::read_file_bytes("/nonexistent/gcide.dict.dz", "dict-gcide"),
                         slowpipe::UsageError,
                         WhatContains("/nonexistent/gcide.dict.dz") && WhatContains("dict-gcide"));
  }
  SECTION("truncated gzip") {
    const std::string real = sm::testing::slurp(kDir + "/t10k-labels-idx1-ubyte.gz");
    TempFile f(".gz");
    for (size_t keep : {real.size() / 2, real.size() - 4, size_t{12}}) {
      f.write(real.substr(0, keep));
      CHECK_THROWS_MATCHES(sm::read_idx(f.path(), 1, "pkg"), slowpipe::DataError,
                           WhatContains(f.path()) && WhatContains("truncated"));
    }
  }
  SECTION("corrupt gzip body") {
    std::string real = sm::testing::slurp(kDir + "/t10k-labels-idx1-ubyte.gz");
    for (size_t i = 100; i < 200; ++i) real[i] = static_cast<char>(real[i] ^ 0x5a);
    TempFile f(".gz");
    f.write(real);
    CHECK_THROWS_MATCHES(sm::read_idx(f.path(), 1, ""), slowpipe::DataError,
                         WhatContains(f.path()));
  }
  SECTION("wrong magic number, gzipped and plain") {
    const std::string body = slowpipe::models::testing::idx_header(0x00000804, {2, 2, 2}) + std::string(8, '\1');
    TempFile gz(".gz"), plain(".idx");
    gz.write(sm::testing::gzip_bytes(body));
    plain.write(body);
    CHECK_THROWS_MATCHES(sm::read_idx(gz.path(), 3, ""), slowpipe::DataError,
                         WhatContains(gz.path()) && WhatContains("magic"));
    CHECK_THROWS_MATCHES(sm::read_idx(plain.path(), 3, ""), slowpipe::DataError,
                         WhatContains("0x00000804"));
    // The same bytes with the right magic parse.
    const std::string good = slowpipe::models::testing::idx_header(0x00000803, {2, 2, 2}) + std::string(8, '\1');
    CHECK(sm::parse_idx(good, 3, "mem").dims == std::vector<int64_t>{2, 2, 2});
  }
  SECTION("size mismatch") {
    TempFile f(".gz");
    f.write(sm::testing::gzip_bytes(slowpipe::models::testing::idx_header(0x00000801, {5}) + std::string(4, '\0')));
    CHECK_THROWS_MATCHES(sm::read_idx(f.path(), 1, ""), slowpipe::DataError,
                         WhatContains(f.path()) && WhatContains("size mismatch"));
  }
}
