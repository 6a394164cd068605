// Checkpoint integrity: damaged, truncated, foreign and old-format files are
// refused with an error naming the file, and the model is left untouched. The
// controls show why: libtorch's own archive loads a flipped tensor byte without
// a word, so only the checksum catches it.
#include <sys/stat.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "common/errors.h"
#include "matchers.h"
#include "model_fixtures.h"
#include "models/torch/checked_file.h"
#include "models/torch/checkpoint.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
namespace st = slowpipe::models::testing;
using st::TempFile;
using st::WhatContains;

namespace {

constexpr float kMarker = 0.375f;  // fills one tensor, to find its data in the file

// A tiny GPT whose token embedding [256, 32] holds kMarker everywhere, saved.
sm::Model saved_marked_gpt(const std::string& path) {
  sm::Model m = sm::build_model(st::tiny_gpt(), st::text_info(16), 1);
  {
    torch::NoGradGuard g;
    m.blocks[0]->named_parameters()["tok.weight"].fill_(kMarker);
  }
  sm::save_checkpoint(m, path);
  return m;
}

// Offset of the middle of the marker tensor's data within `bytes`.
size_t marker_middle(const std::string& bytes) {
  std::string run;
  for (int i = 0; i < 256 * 32; ++i) run.append(reinterpret_cast<const char*>(&kMarker), 4);
  const size_t at = bytes.find(run);
  REQUIRE(at != std::string::npos);
  return at + run.size() / 2 + 1;
}

std::string flip_random(std::string bytes, size_t count, std::mt19937_64& rng) {
  std::set<size_t> offsets;
  while (offsets.size() < count) offsets.insert(rng() % bytes.size());
  for (size_t at : offsets) bytes[at] = static_cast<char>(bytes[at] ^ (1 + rng() % 255));
  return bytes;
}

}  // namespace

TEST_CASE("Checkpoint: 32 random flipped bytes are refused, the model untouched") {
  TempFile file(".pt"), bad(".pt");
  sm::save_checkpoint(sm::build_model(st::tiny_gpt(), st::text_info(16), 1), file.path());
  const std::string good = st::slurp(file.path());
  sm::Model target = sm::build_model(st::tiny_gpt(), st::text_info(16), 9);
  const sm::Model fresh = sm::build_model(st::tiny_gpt(), st::text_info(16), 9);
  std::mt19937_64 rng(32);
  for (int trial = 0; trial < 50; ++trial) {
    bad.write(flip_random(good, 32, rng));
    CHECK_THROWS_MATCHES(sm::load_checkpoint(target, bad.path()), slowpipe::DataError,
                         WhatContains(bad.path()) && WhatContains("model.init_from"));
  }
  CHECK(st::same_params(target, fresh));
}

TEST_CASE("Checkpoint: one flipped byte in the middle of a tensor's data is caught") {
  TempFile file(".pt"), bad(".pt");
  const sm::Model saved = saved_marked_gpt(file.path());
  std::string bytes = st::slurp(file.path());
  bytes[marker_middle(bytes)] ^= 0x01;
  bad.write(bytes);
  sm::Model target = sm::build_model(st::tiny_gpt(), st::text_info(16), 9);
  CHECK_THROWS_MATCHES(sm::load_checkpoint(target, bad.path()), slowpipe::DataError,
                       WhatContains(bad.path()) && WhatContains("checksum mismatch"));

  // Control: the archive inside, with the same byte flipped, loads silently.
  std::string payload = sm::read_checked_file(file.path()).payload;
  payload[marker_middle(payload)] ^= 0x01;
  torch::serialize::InputArchive archive;
  archive.load_from(payload.data(), payload.size());
  at::Tensor tok;
  REQUIRE(archive.try_read("b0__tok__weight", tok));
  CHECK(tok.ne(kMarker).sum().item<int64_t>() == 1);  // one wrong value, no error
  // And the intact file loads.
  sm::load_checkpoint(target, file.path());
  CHECK(st::same_params(target, saved));
}

TEST_CASE("Checkpoint: truncated, foreign, old-format and other-kind files are refused") {
  TempFile file(".pt"), bad(".pt");
  const sm::Model saved = saved_marked_gpt(file.path());
  const std::string good = st::slurp(file.path());
  sm::Model target = sm::build_model(st::tiny_gpt(), st::text_info(16), 9);

  for (size_t keep :
       {size_t{0}, size_t{5}, size_t{30}, size_t{200}, good.size() / 2, good.size() - 1}) {
    bad.write(good.substr(0, keep));
    CHECK_THROWS_MATCHES(sm::load_checkpoint(target, bad.path()), slowpipe::DataError,
                         WhatContains(bad.path()));
  }
  bad.write(good.substr(0, good.size() / 2));
  CHECK_THROWS_MATCHES(sm::load_checkpoint(target, bad.path()), slowpipe::DataError,
                       WhatContains("truncated"));
  bad.write("model weights, honest\n");
  CHECK_THROWS_MATCHES(sm::load_checkpoint(target, bad.path()), slowpipe::DataError,
                       WhatContains(bad.path()) && WhatContains("not a slowpipe file"));

  // The format before checksums: a bare libtorch archive.
  torch::serialize::OutputArchive old;
  old.write("slowpipe_model", c10::IValue(std::string("gpt")));
  old.save_to(bad.path());
  CHECK_THROWS_MATCHES(
      sm::load_checkpoint(target, bad.path()), slowpipe::DataError,
      WhatContains(bad.path()) && WhatContains("old format") && WhatContains("re-create"));

  sm::write_checked_file(bad.path(), "slowpipe.resume", "{}", "state");
  CHECK_THROWS_MATCHES(sm::load_checkpoint(target, bad.path()), slowpipe::UsageError,
                       WhatContains(bad.path()) && WhatContains("not a model checkpoint"));
  CHECK_FALSE(st::same_params(target, saved));  // nothing was loaded
}

TEST_CASE("Checkpoint: model.init_from naming a directory, a device or a FIFO is a usage error") {
  sm::Model target = sm::build_model(st::tiny_gpt(), st::text_info(16), 9);
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_MATCHES(sm::load_checkpoint(target, dir), slowpipe::UsageError,
                       WhatContains("model.init_from") && WhatContains("directory"));
  CHECK_THROWS_MATCHES(
      sm::load_checkpoint(target, "/dev/zero"), slowpipe::UsageError,
      WhatContains("model.init_from") && WhatContains("/dev/zero") && WhatContains("device"));
  TempFile fifo(".fifo");
  REQUIRE(::mkfifo(fifo.path().c_str(), 0600) == 0);
  CHECK_THROWS_MATCHES(sm::load_checkpoint(target, fifo.path()), slowpipe::UsageError,
                       WhatContains("model.init_from") && WhatContains("FIFO"));
}

TEST_CASE("Checkpoint: the data shape of a classifier is part of its config") {
  TempFile file(".pt");
  sm::save_checkpoint(sm::build_model(st::tiny_cnn(), st::image_info(), 1), file.path());
  auto five = st::image_info();
  five.num_classes = 5;
  sm::Model other = sm::build_model(st::tiny_cnn(), five, 2);
  CHECK_THROWS_MATCHES(sm::load_checkpoint(other, file.path()), slowpipe::UsageError,
                       WhatContains("written for data.classes=10, this run has data.classes=5"));
}

TEST_CASE("Checkpoint: validate_model_config checks model.init_from before anything is built") {
  TempFile file(".pt");
  sm::save_checkpoint(sm::build_model(st::tiny_gpt(), st::text_info(16), 1), file.path());
  auto cfg = st::tiny_gpt();
  cfg.init_from = file.path();
  CHECK_NOTHROW(sm::validate_model_config(cfg));
  cfg.d_model = 64;
  CHECK_THROWS_MATCHES(
      sm::validate_model_config(cfg), slowpipe::UsageError,
      WhatContains(file.path()) && WhatContains("written for model.d_model=32, this run has "
                                                "model.d_model=64"));
  cfg = st::tiny_cnn();
  cfg.init_from = file.path();
  CHECK_THROWS_MATCHES(sm::validate_model_config(cfg), slowpipe::UsageError,
                       WhatContains("'gpt' model, not 'cnn'"));
  cfg = st::tiny_gpt();
  cfg.init_from = "/nonexistent/pre.pt";
  CHECK_THROWS_MATCHES(sm::validate_model_config(cfg), slowpipe::UsageError,
                       WhatContains("model.init_from") && WhatContains("/nonexistent/pre.pt"));
  TempFile cut(".pt");
  cut.write(st::slurp(file.path()).substr(0, 100));
  cfg.init_from = cut.path();
  CHECK_THROWS_MATCHES(sm::validate_model_config(cfg), slowpipe::DataError,
                       WhatContains(cut.path()) && WhatContains("truncated"));
}
