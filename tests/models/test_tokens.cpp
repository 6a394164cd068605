// Token-shard tests (data.name = tokens): shards written here byte by byte
// (a 256-word little-endian int32 header - magic 20240520, version 1, token
// count - then uint16 ids, as train_gpt.py's reader expects) read back
// exactly; windows across shards, shifted targets, the validation split, ids
// stable between two loads; every refusal with its message.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "matchers.h"
#include "models/facts/data_facts.h"
#include "models/torch/data_registry.h"
#include "models/torch/internal/token_dataset.h"
#include "models/torch/internal/token_shards.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
using sm::testing::TempFile;
using sm::testing::WhatContains;

namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}

// A shard's bytes: the header (words 3..255 zero), then `tokens`.
std::string shard_bytes(const std::vector<uint16_t>& tokens, int64_t announced = -1,
                        int32_t magic = 20240520, int32_t version = 1) {
  std::string s;
  put_le(s, static_cast<uint32_t>(magic), 4);
  put_le(s, static_cast<uint32_t>(version), 4);
  put_le(s, static_cast<uint32_t>(announced < 0 ? static_cast<int64_t>(tokens.size()) : announced),
         4);
  s.resize(1024, '\0');
  for (uint16_t t : tokens) put_le(s, t, 2);
  return s;
}

std::vector<uint16_t> ramp(size_t n, size_t start, uint16_t modulo) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint16_t>((start + i * 7) % modulo);
  return v;
}

// A folder of shards, removed with everything in it on scope exit.
struct ShardDir {
  TempFile name{"_shards"};
  std::string path = name.path();
  ShardDir() { std::filesystem::create_directories(path); }
  ~ShardDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& file, const std::string& bytes) const {
    std::string p = path + "/" + file;
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
};

sm::DataConfig tokens_at(const std::string& glob) {
  sm::DataConfig cfg;
  cfg.name = "tokens";
  cfg.path = glob;
  return cfg;
}

}  // namespace

TEST_CASE("Token shards: the header's count and every token read back exactly") {
  ShardDir dir;
  const std::vector<uint16_t> tokens = {0, 1, 255, 256, 1000, 50256, 65535, 7};
  const std::string p = dir.write("a.bin", shard_bytes(tokens));
  CHECK(sm::shard_token_count(shard_bytes(tokens), p) == 8);
  CHECK(sm::read_token_shard(p, 65536) == tokens);
  // Bytes past the announced tokens are not read, as train_gpt.py reads none.
  const std::string longer = dir.write("b.bin", shard_bytes(tokens, 5) + "trailing");
  CHECK(sm::read_token_shard(longer, 65536) ==
        std::vector<uint16_t>(tokens.begin(), tokens.begin() + 5));
  const std::string empty = dir.write("c.bin", shard_bytes({}));
  CHECK(sm::read_token_shard(empty, 256).empty());
}

TEST_CASE("Token shards: every refusal names the file and what is wrong") {
  ShardDir dir;
  const std::vector<uint16_t> tokens = ramp(100, 0, 256);
  const std::string magic = dir.write("magic.bin", shard_bytes(tokens, -1, 20240521));
  CHECK_THROWS_MATCHES(
      sm::read_token_shard(magic, 256), slowpipe::UsageError,
      WhatContains("magic.bin") && WhatContains("magic number 20240521, not 20240520"));
  const std::string version = dir.write("version.bin", shard_bytes(tokens, -1, 20240520, 2));
  CHECK_THROWS_MATCHES(sm::read_token_shard(version, 256), slowpipe::UsageError,
                       WhatContains("version.bin") && WhatContains("version 2"));
  const std::string header = dir.write("header.bin", shard_bytes(tokens).substr(0, 1000));
  CHECK_THROWS_MATCHES(sm::read_token_shard(header, 256), slowpipe::UsageError,
                       WhatContains("header.bin") &&
                           WhatContains("holds 1000 bytes, fewer than its 1024-byte header"));
  const std::string trunc = dir.write("trunc.bin", shard_bytes(tokens, 101));
  CHECK_THROWS_MATCHES(
      sm::read_token_shard(trunc, 256), slowpipe::UsageError,
      WhatContains("trunc.bin' is truncated: its header announces 101 tokens, the file holds 100"));
  const std::string odd = dir.write("odd.bin", shard_bytes(tokens, 101) + "x");  // half a token
  CHECK_THROWS_MATCHES(sm::read_token_shard(odd, 256), slowpipe::UsageError,
                       WhatContains("truncated"));
  const std::string negative = dir.write("negative.bin", shard_bytes(tokens, 0xffffffffLL));
  CHECK_THROWS_MATCHES(sm::read_token_shard(negative, 256), slowpipe::UsageError,
                       WhatContains("announces -1 tokens"));
  std::vector<uint16_t> big = tokens;
  big[42] = 256;
  const std::string vocab = dir.write("vocab.bin", shard_bytes(big));
  CHECK_THROWS_MATCHES(
      sm::read_token_shard(vocab, 256), slowpipe::UsageError,
      WhatContains("data.path") && WhatContains("vocab.bin") &&
          WhatContains("token 256 at position 42 is outside the model's vocabulary of 256"));
  CHECK(sm::read_token_shard(vocab, 257).at(42) == 256);  // a larger vocabulary holds it
  CHECK_THROWS_MATCHES(sm::match_shards(dir.path + "/*.nope", "data.path"), slowpipe::UsageError,
                       WhatContains("data.path: no file matches") && WhatContains("*.nope"));
}

TEST_CASE("Token shards: a glob's matches in byte order, directories refused on reading") {
  ShardDir dir;
  dir.write("b_000002.bin", shard_bytes({2}));
  dir.write("a_000010.bin", shard_bytes({3}));
  dir.write("b_000001.bin", shard_bytes({1}));
  dir.write("notes.txt", "x");
  const auto files = sm::match_shards(dir.path + "/*.bin", "data.path");
  REQUIRE(files.size() == 3);
  CHECK(files[0] == dir.path + "/a_000010.bin");
  CHECK(files[1] == dir.path + "/b_000001.bin");
  CHECK(files[2] == dir.path + "/b_000002.bin");
  std::filesystem::create_directories(dir.path + "/c.bin");
  CHECK_THROWS_MATCHES(sm::validate_data_config(tokens_at(dir.path + "/*.bin")),
                       slowpipe::UsageError, WhatContains("c.bin"));
}

TEST_CASE("TokenDataset: windows of seq_len+1 tokens across shards, the last ones held out") {
  ShardDir dir;
  // 3 shards of 37 + 40 + 24 = 101 tokens: 10 windows of 10 (the last token dropped).
  std::vector<uint16_t> stream = ramp(101, 3, 50000);
  dir.write("s_0.bin", shard_bytes({stream.begin(), stream.begin() + 37}));
  dir.write("s_1.bin", shard_bytes({stream.begin() + 37, stream.begin() + 77}));
  dir.write("s_2.bin", shard_bytes({stream.begin() + 77, stream.end()}));
  sm::DataConfig cfg = tokens_at(dir.path + "/s_*.bin");
  cfg.val_fraction = 0.2;
  sm::TokenDataset ds(cfg.path, cfg, /*seq_len=*/9, /*vocab=*/50304);
  REQUIRE(ds.size(sm::Split::kTrain) == 8);
  REQUIRE(ds.size(sm::Split::kValidation) == 2);
  CHECK(ds.info().task == sm::Task::kLanguageModel);
  CHECK(ds.info().num_classes == 50304);
  CHECK(ds.info().sample_shape == std::vector<int64_t>{9});
  CHECK(ds.info().source == cfg.path + " (3 files)");
  const auto check = [&](const sm::Batch& b, int64_t row, int64_t offset) {
    for (int64_t j = 0; j < 9; ++j) {
      REQUIRE(b.inputs[row][j].item<int64_t>() == stream[static_cast<size_t>(offset + j)]);
      REQUIRE(b.targets[row][j].item<int64_t>() == stream[static_cast<size_t>(offset + j + 1)]);
    }
  };
  const sm::Batch b = ds.get(sm::Split::kTrain, {3, 0, 7});  // window 3 spans shards 0 and 1
  CHECK(b.inputs.sizes() == at::IntArrayRef({3, 9}));
  CHECK(b.inputs.scalar_type() == torch::kLong);
  CHECK(b.ids.equal(torch::tensor({3, 0, 7}, torch::kLong)));
  check(b, 0, 30);
  check(b, 1, 0);
  check(b, 2, 70);
  const sm::Batch v = ds.get(sm::Split::kValidation, {1, 0});
  check(v, 0, 90);
  check(v, 1, 80);
  CHECK(ds.token_offset(sm::Split::kValidation, 0) == 80);
  CHECK_THROWS_AS(ds.get(sm::Split::kValidation, {2}), std::out_of_range);

  // Ids are stable: a second load gives the same samples for the same ids.
  sm::TokenDataset again(cfg.path, cfg, 9, 50304);
  const sm::Batch b2 = again.get(sm::Split::kTrain, {3, 0, 7});
  CHECK(b2.inputs.equal(b.inputs));
  CHECK(b2.targets.equal(b.targets));
}

TEST_CASE("TokenDataset: data.begin/end select tokens, limits cap the splits, too few refused") {
  ShardDir dir;
  const std::vector<uint16_t> stream = ramp(200, 0, 256);
  dir.write("one.bin", shard_bytes(stream));
  sm::DataConfig cfg = tokens_at(dir.path + "/one.bin");
  cfg.begin = 0.5;  // tokens [100, 200): 10 windows of 10
  cfg.val_fraction = 0.1;
  sm::TokenDataset ds(cfg.path, cfg, 9, 256);
  CHECK(ds.size(sm::Split::kTrain) == 9);
  CHECK(ds.size(sm::Split::kValidation) == 1);
  CHECK(ds.token_offset(sm::Split::kTrain, 0) == 100);
  CHECK(ds.get(sm::Split::kTrain, {0}).inputs[0][0].item<int64_t>() == stream[100]);
  CHECK(ds.token_offset(sm::Split::kValidation, 0) == 190);
  cfg.limit = 4;
  cfg.val_limit = 1;
  sm::TokenDataset capped(cfg.path, cfg, 9, 256);
  CHECK(capped.size(sm::Split::kTrain) == 4);
  CHECK(capped.get(sm::Split::kValidation, {0})
            .inputs.equal(ds.get(sm::Split::kValidation, {0}).inputs));
  CHECK_THROWS_MATCHES(
      sm::TokenDataset(cfg.path, cfg, 199, 256), slowpipe::UsageError,
      WhatContains("too few for a training window of model.seq_len+1 = 200 tokens"));
}

TEST_CASE("make_dataset: data.name=tokens takes its vocabulary from the model") {
  ShardDir dir;
  dir.write("t.bin", shard_bytes(ramp(300, 0, 256)));
  const sm::DataConfig cfg = tokens_at(dir.path + "/*.bin");
  sm::ModelConfig gpt;
  gpt.name = "gpt";
  REQUIRE(sm::model_vocab(gpt) == 256);
  sm::ModelConfig cnn;
  cnn.name = "cnn";
  CHECK(sm::model_vocab(cnn) == 0);
  const auto ds = sm::make_dataset(cfg, 15, sm::model_vocab(gpt));
  CHECK(ds->info().name == "tokens");
  CHECK(ds->info().num_classes == 256);
  CHECK(ds->size(sm::Split::kTrain) + ds->size(sm::Split::kValidation) == 300 / 16);
  CHECK_THROWS_MATCHES(sm::make_dataset(cfg, 15), slowpipe::UsageError,
                       WhatContains("data.name=tokens needs a language model"));
  CHECK_THROWS_MATCHES(sm::make_dataset(tokens_at(dir.path + "/*.none"), 15, 256),
                       slowpipe::UsageError, WhatContains("no file matches"));
  sm::DataConfig no_path = cfg;
  no_path.path.clear();
  CHECK_THROWS_MATCHES(sm::validate_data_config(no_path), slowpipe::UsageError,
                       WhatContains("data.name=tokens needs data.path"));
  CHECK(sm::find_dataset("tokens").path_is_glob);
  CHECK(sm::dataset_facts_registry().at("data.name", "tokens").path_is_glob);
}

TEST_CASE("model.vocab: a GPT with a larger vocabulary reads ids above 255; byte text needs 256") {
  ShardDir dir;
  dir.write("t.bin", shard_bytes(ramp(400, 250, 300)));  // ids 250..299
  const sm::DataConfig cfg = tokens_at(dir.path + "/*.bin");
  for (const char* name : {"gpt", "protocol-gpt"}) {
    INFO(name);
    sm::ModelConfig m;
    m.name = name;
    m.layers = 1;
    m.d_model = 32;
    m.heads = 4;
    m.seq_len = 15;
    // The byte vocabulary refuses id 256 and above.
    CHECK_THROWS_MATCHES(sm::make_dataset(cfg, 15, sm::model_vocab(m)), slowpipe::UsageError,
                         WhatContains("outside the model's vocabulary of 256"));
    m.vocab = 300;
    REQUIRE(sm::model_vocab(m) == 300);
    const auto ds = sm::make_dataset(cfg, 15, sm::model_vocab(m));
    CHECK(ds->info().num_classes == 300);
    const sm::Model model = sm::build_model(m, ds->info(), 1);
    const sm::Batch b = ds->get(sm::Split::kTrain, {0, 1});
    at::Tensor h = b.inputs;
    for (const auto& block : model.blocks) h = block->forward(h);
    CHECK(h.sizes().vec() == std::vector<int64_t>{2, 15, 300});  // logits over 300 ids
    CHECK(sm::loss(model.task, h, b.targets).item<double>() > 0);
    // Byte text with fewer than 256 ids in the model is refused, naming the key.
    m.vocab = 200;
    sm::DatasetInfo text{"text", sm::Task::kLanguageModel, {15}, 256, ""};
    CHECK_THROWS_MATCHES(sm::build_model(m, text, 1), slowpipe::UsageError,
                         WhatContains("set model.vocab to at least 256"));
  }
  sm::ModelConfig cnn;
  cnn.name = "cnn";
  cnn.vocab = 300;
  CHECK_THROWS_MATCHES(sm::validate_model_config(cnn), slowpipe::UsageError,
                       WhatContains("model.vocab=300 applies to a language model"));
}
