// Shared set-up for the engine tests: a small text corpus written to a temp
// file, tiny GPT and CNN configurations, and a loop that trains N steps.
#pragma once

#include <ATen/ATen.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "models/facts/data_config.h"
#include "models/torch/data_registry.h"
#include "models/torch/sampler.h"
#include "sim/engine.h"

namespace slowpipe::test {

// A deterministic ~24 KB English-like text, written once per process into the
// temp folder (never the working directory) and removed when the process ends.
inline std::string corpus_path() {
  struct TempFile {
    std::string path;
    ~TempFile() { std::remove(path.c_str()); }
  };
  static const TempFile file{[] {
    std::string p = (std::filesystem::temp_directory_path() /
                     ("slowpipe_test_corpus_" + std::to_string(::getpid()) + ".txt"))
                        .string();
    std::ofstream f(p);
    const char* words[] = {"the",        "pipeline",   "stage", "sends", "a",
                           "compressed", "activation", "over",  "slow",  "links",
                           "and",        "gradients",  "flow",  "back",  "through",
                           "every",      "boundary",   "of",    "model"};
    uint32_t x = 12345;
    for (int i = 0; i < 4000; ++i) {
      x = x * 1103515245u + 12345u;
      f << words[(x >> 16) % 19] << ((i % 11 == 10) ? ".\n" : " ");
    }
    return p;
  }()};
  return file.path;
}

inline std::unique_ptr<models::Dataset> text_data(int seq_len) {
  models::DataConfig d;
  d.name = "text";
  d.path = corpus_path();
  return models::make_dataset(d, seq_len);
}

inline std::unique_ptr<models::Dataset> image_data(int64_t limit) {
  models::DataConfig d;
  d.name = "fashion-mnist";
  d.limit = limit;
  d.val_limit = limit;
  return models::make_dataset(d, 0);
}

inline sim::EngineSetup gpt_setup(const models::Dataset& data, int stages) {
  sim::EngineSetup s;
  s.model.name = "gpt";
  s.model.layers = 2;  // embedding + 2 blocks + head = 4 blocks
  s.model.d_model = 32;
  s.model.heads = 2;
  s.model.seq_len = 16;
  s.data = data.info();
  s.pipeline.stages = stages;
  s.pipeline.batch_size = 8;
  s.optim.name = "adamw";
  s.optim.lr = 3e-3;
  s.seed = 7;
  s.train_samples = data.size(models::Split::kTrain);
  return s;
}

inline sim::EngineSetup cnn_setup(const models::Dataset& data, int stages) {
  sim::EngineSetup s;
  s.model.name = "cnn";
  s.model.layers = 2;
  s.model.channels = 4;
  s.data = data.info();
  s.pipeline.stages = stages;
  s.pipeline.batch_size = 8;
  s.optim.name = "sgd";
  s.optim.lr = 0.05;
  s.seed = 7;
  s.train_samples = data.size(models::Split::kTrain);
  return s;
}

struct RunOutput {
  std::vector<double> losses;
  std::vector<sim::StepResult> results;
};

inline RunOutput run_steps(const sim::EngineSetup& setup, const models::Dataset& data, int steps,
                           bool keep_results = false) {
  sim::PipelineEngine engine(setup);
  models::EpochSampler sampler(data.size(models::Split::kTrain), setup.pipeline.batch_size,
                               setup.seed, true, true);
  RunOutput out;
  for (int i = 0; i < steps; ++i) {
    auto r = engine.train_step(data.get(models::Split::kTrain, sampler.next().indices), i, steps);
    out.losses.push_back(r.loss);
    if (keep_results) out.results.push_back(std::move(r));
  }
  return out;
}

// `to` takes up where `from` stopped: from's save_state, through the bytes a
// resume checkpoint would hold, into to's load_state.
inline void resume_from(const sim::PipelineEngine& from, sim::PipelineEngine& to) {
  torch::serialize::OutputArchive out;
  from.save_state(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream is(bytes.str());
  in.load_from(is);
  to.load_state(in);
}

}  // namespace slowpipe::test
