// Byte-level text loader tests: windows, shifted targets, split determinism and
// disjointness, ids, begin/end ranges, limits, gzip input, the real GCIDE file.
#include <torch/torch.h>
#include <zlib.h>

#include <catch2/catch.hpp>

#include "common/errors.h"
#include "common/options.h"
#include "matchers.h"
#include "models/facts/data_facts.h"
#include "models/torch/data_registry.h"
#include "models/torch/internal/file_bytes.h"
#include "models/torch/internal/text_dataset.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
using slowpipe::models::testing::WhatContains;
using sm::testing::TempFile;

namespace {

std::string corpus(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 251) % 256);
  return s;
}

// The expected window for a sample, straight from the bytes.
void check_sample(const sm::Batch& b, int64_t row, const std::string& bytes, int64_t offset,
                  int64_t t) {
  for (int64_t j = 0; j < t; ++j) {
    REQUIRE(b.inputs[row][j].item<int64_t>() == static_cast<unsigned char>(bytes[offset + j]));
    REQUIRE(b.targets[row][j].item<int64_t>() == static_cast<unsigned char>(bytes[offset + j + 1]));
  }
}

}  // namespace

TEST_CASE("TextDataset: windows of seq_len+1 bytes, targets shifted by one") {
  const std::string bytes = corpus(1005);
  sm::DataConfig cfg;
  cfg.val_fraction = 0.1;
  sm::TextDataset ds("text", "mem", bytes, cfg, /*seq_len=*/9);  // 100 windows of 10
  REQUIRE(ds.size(sm::Split::kTrain) == 90);
  REQUIRE(ds.size(sm::Split::kValidation) == 10);
  CHECK(ds.info().task == sm::Task::kLanguageModel);
  CHECK(ds.info().num_classes == 256);
  CHECK(ds.info().sample_shape == std::vector<int64_t>{9});

  auto b = ds.get(sm::Split::kTrain, {0, 89, 5});
  CHECK(b.inputs.sizes() == at::IntArrayRef({3, 9}));
  CHECK(b.inputs.scalar_type() == torch::kLong);
  CHECK(b.ids.equal(torch::tensor({0, 89, 5}, torch::kLong)));
  check_sample(b, 0, bytes, 0, 9);
  check_sample(b, 1, bytes, 890, 9);
  check_sample(b, 2, bytes, 50, 9);
  auto v = ds.get(sm::Split::kValidation, {0, 9});
  check_sample(v, 0, bytes, 900, 9);  // validation = the last windows
  check_sample(v, 1, bytes, 990, 9);
  CHECK(v.ids.equal(torch::tensor({0, 9}, torch::kLong)));
  CHECK_THROWS_AS(ds.get(sm::Split::kValidation, {10}), std::out_of_range);
  CHECK_THROWS_AS(ds.get(sm::Split::kTrain, {-1}), std::out_of_range);
}

TEST_CASE("TextDataset: the split is deterministic and train/validation are disjoint") {
  const std::string bytes = corpus(20000);
  sm::DataConfig cfg;
  cfg.val_fraction = 0.25;
  sm::TextDataset a("text", "mem", bytes, cfg, 15), b("text", "mem", bytes, cfg, 15);
  std::vector<int64_t> all(static_cast<size_t>(a.size(sm::Split::kTrain)));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  CHECK(a.get(sm::Split::kTrain, all).inputs.equal(b.get(sm::Split::kTrain, all).inputs));
  const int64_t last_train = a.byte_offset(sm::Split::kTrain, a.size(sm::Split::kTrain) - 1);
  CHECK(last_train + 16 <= a.byte_offset(sm::Split::kValidation, 0));
  CHECK(a.size(sm::Split::kValidation) == (20000 / 16) / 4);
}

TEST_CASE("TextDataset: begin/end select distinct ranges; limits cap the splits") {
  const std::string bytes = corpus(10000);
  sm::DataConfig pre, fine;
  pre.end = 0.8;
  fine.begin = 0.9;
  sm::TextDataset p("text", "mem", bytes, pre, 19), f("text", "mem", bytes, fine, 19);
  CHECK(p.size(sm::Split::kTrain) + p.size(sm::Split::kValidation) == 8000 / 20);
  CHECK(f.size(sm::Split::kTrain) + f.size(sm::Split::kValidation) == 1000 / 20);
  CHECK(f.byte_offset(sm::Split::kTrain, 0) == 9000);
  check_sample(f.get(sm::Split::kTrain, {0}), 0, bytes, 9000, 19);
  const int64_t p_end =
      p.byte_offset(sm::Split::kValidation, p.size(sm::Split::kValidation) - 1) + 20;
  CHECK(p_end <= 8000);

  sm::DataConfig lim;
  lim.limit = 7;
  lim.val_limit = 3;
  sm::TextDataset l("text", "mem", bytes, lim, 19);
  CHECK(l.size(sm::Split::kTrain) == 7);
  CHECK(l.size(sm::Split::kValidation) == 3);
  // Limits do not move the validation windows.
  CHECK(l.byte_offset(sm::Split::kValidation, 0) == (500 - 50) * 20);

  sm::DataConfig bad;
  bad.begin = 0.5;
  bad.end = 0.5;
  CHECK_THROWS_AS(sm::TextDataset("text", "mem", bytes, bad, 19), slowpipe::UsageError);
  CHECK_THROWS_MATCHES(sm::TextDataset("text", "tiny.txt", "0123456789", sm::DataConfig{}, 19),
                       slowpipe::UsageError, WhatContains("tiny.txt"));
}

TEST_CASE("make_dataset: text from a plain file and from gzip give the same samples") {
  const std::string bytes = corpus(30000);
  TempFile plain(".txt"), gz(".txt.gz");
  plain.write(bytes);
  gz.write(sm::testing::gzip_bytes(bytes));
  sm::DataConfig cfg;
  cfg.name = "text";
  cfg.path = plain.path();
  auto a = sm::make_dataset(cfg, 31);
  cfg.path = gz.path();
  auto b = sm::make_dataset(cfg, 31);
  REQUIRE(a->size(sm::Split::kTrain) == b->size(sm::Split::kTrain));
  CHECK(a->get(sm::Split::kTrain, {0, 1, 500})
            .inputs.equal(b->get(sm::Split::kTrain, {0, 1, 500}).inputs));
  CHECK(b->info().source == gz.path());

  cfg.path = "";
  CHECK_THROWS_MATCHES(sm::make_dataset(cfg, 31), slowpipe::UsageError, WhatContains("data.path"));
  cfg.path = "/nonexistent/corpus.txt";
  CHECK_THROWS_MATCHES(sm::make_dataset(cfg, 31), slowpipe::UsageError,
                       WhatContains("/nonexistent/corpus.txt"));
  TempFile trunc(".gz");
  trunc.write(sm::testing::gzip_bytes(bytes).substr(0, 500));
  cfg.path = trunc.path();
  CHECK_THROWS_MATCHES(sm::make_dataset(cfg, 31), slowpipe::DataError, WhatContains(trunc.path()));
}

TEST_CASE("make_dataset: the whole GCIDE dictionary, checked against zlib's gzread") {
  sm::DataConfig cfg;  // gcide, default path
  auto ds = sm::make_dataset(cfg, 64);
  gzFile f = gzopen("/usr/share/dictd/gcide.dict.dz", "rb");
  REQUIRE(f != nullptr);
  std::string ref(1 << 20, '\0');
  const int n = gzread(f, &ref[0], static_cast<unsigned>(ref.size()));
  gzclose(f);
  REQUIRE(n == static_cast<int>(ref.size()));
  check_sample(ds->get(sm::Split::kTrain, {0, 1000, 16000}), 1, ref, 1000 * 65, 64);
  check_sample(ds->get(sm::Split::kTrain, {0, 1000, 16000}), 2, ref, 16000 * 65, 64);
  const int64_t windows = ds->size(sm::Split::kTrain) + ds->size(sm::Split::kValidation);
  CHECK(windows > 500000);  // ~40 MB of text
  CHECK(ds->size(sm::Split::kValidation) == windows / 10);
}

TEST_CASE("DataConfig: keys, defaults and bad values") {
  sm::DataConfig cfg;
  slowpipe::OptionSet opts;
  sm::describe_options(cfg, opts);
  CHECK(opts.get("data.name") == "gcide");
  opts.set("data.name", "fashion-mnist");
  opts.set("data.begin", "0.9");
  CHECK(cfg.name == "fashion-mnist");
  CHECK(cfg.begin == 0.9);
  CHECK_THROWS_AS(opts.set("data.name", "imagenet"), slowpipe::UsageError);
  CHECK_THROWS_AS(opts.set("data.val_fraction", "1.5"), slowpipe::UsageError);
  CHECK_THROWS_AS(opts.set("data.limit", "-1"), slowpipe::UsageError);
  CHECK_THROWS_AS(sm::find_dataset("imagenet"), slowpipe::UsageError);
}

TEST_CASE("Data-set registry: the built-ins and a user's data set go through register_dataset") {
  const auto names = sm::dataset_names();
  REQUIRE(names.size() >= 3);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 3) ==
        std::vector<std::string>{"gcide", "fashion-mnist", "text"});
  CHECK(sm::find_dataset("fashion-mnist").path_is_directory);
  sm::DatasetEntry e;
  e.name = "test-registry-bytes";
  e.description = "a data set registered by a test";
  e.make = [](const sm::DataConfig&, const std::string&, int64_t, int64_t) {
    return std::unique_ptr<sm::Dataset>();
  };
  sm::register_dataset(e);
  CHECK(sm::dataset_names().back() == "test-registry-bytes");
  CHECK(sm::find_dataset("test-registry-bytes").default_path.empty());
  // data.name's choices are the data sets' facts (torch-free): the same names
  // in the same order, and the same files, packages and descriptions.
  REQUIRE(sm::dataset_facts_registry().names() == sm::dataset_names());
  for (const auto& name : sm::dataset_names()) {
    const sm::DatasetEntry& entry = sm::find_dataset(name);
    const sm::DatasetFacts* facts = sm::dataset_facts_registry().find(name);
    REQUIRE(facts != nullptr);
    CHECK(facts->description == entry.description);
    CHECK(facts->default_path == entry.default_path);
    CHECK(facts->debian_package == entry.debian_package);
    CHECK(facts->path_is_directory == entry.path_is_directory);
    CHECK(facts->path_is_glob == entry.path_is_glob);
  }
  sm::DataConfig cfg;
  slowpipe::OptionSet opts;
  sm::describe_options(cfg, opts);
  opts.set("data.name", "test-registry-bytes");
  CHECK(cfg.name == "test-registry-bytes");
  CHECK_THROWS_AS(sm::register_dataset(e), std::logic_error);
  e.name = "gcide";
  CHECK_THROWS_AS(sm::register_dataset(e), std::logic_error);
  CHECK_THROWS_WITH(sm::find_dataset("imagenet"),
                    Catch::Contains("'data.name'") && Catch::Contains("unknown data set"));
}
