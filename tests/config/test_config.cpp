// slowpipe::config without libtorch: the train option set takes every module's
// keys with the registries' choices, the resume keys are exactly the ones that
// do not change what is computed, and preflight refuses what train refuses,
// running the device and model checks only when a libtorch-linked caller
// passes them (a sweep leaves them to the point's own run), in train's order.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "config/optim_registry.h"
#include "config/preflight.h"
#include "config/train_config.h"

namespace fs = std::filesystem;
namespace cf = slowpipe::config;

namespace {

// A fresh folder under the temporary directory, removed at the end of the scope.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("slowpipe-test-config." + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A config with its option set; run.out in `dir`.
struct Options {
  cf::TrainConfig config;
  slowpipe::OptionSet options;
  explicit Options(const fs::path& dir) {
    cf::describe_options(config, options);
    options.set("run.out", (dir / "run.h5").string());
  }
};

}  // namespace

TEST_CASE("Train options: every module's keys, choices from the registries") {
  TempDir dir;
  Options o(dir.path);
  o.options.set("model.name", "cnn");
  o.options.set("data.name", "fashion-mnist");
  o.options.set("optim.name", "sgd");
  o.options.set("optim.schedule", "linear");
  o.options.set("compress.fw", "q4");
  o.options.set("net.bandwidth", "100Mbps");
  o.options.set("pipeline.schedule", "1f1b");
  CHECK(o.config.model.name == "cnn");
  CHECK(o.config.data.name == "fashion-mnist");
  CHECK(o.config.optim.name == "sgd");
  CHECK(o.config.optim.schedule == "linear");
  CHECK(o.config.compress.fw.text() == "q4");
  CHECK_THROWS_WITH(o.options.set("model.name", "rnn"), Catch::Contains("gpt|cnn|mlp"));
  CHECK_THROWS_AS(o.options.set("data.name", "imagenet"), slowpipe::UsageError);
  CHECK_THROWS_AS(o.options.set("optim.name", "lamb"), slowpipe::UsageError);
  CHECK_THROWS_AS(o.options.set("model.layerz", "2"), slowpipe::UsageError);
  // optim.* choices are the registries' names.
  for (const auto& name : cf::optimizer_registry().names()) o.options.set("optim.name", name);
  for (const auto& name : cf::lr_schedule_registry().names()) o.options.set("optim.schedule", name);
}

TEST_CASE("resume_key_may_differ: display, checkpoint, output and rendezvous keys only") {
  for (const char* key : {"run.progress", "run.flush_every", "run.checkpoint_every",
                          "run.checkpoint_keep", "run.out", "run.overwrite", "dist.rank",
                          "dist.master_addr", "dist.master_port", "dist.timeout", "dist.verbose"}) {
    CHECK(cf::resume_key_may_differ(key));
  }
  TempDir dir;
  Options o(dir.path);
  int computational = 0;
  for (const auto& opt : o.options.options()) {
    if (!cf::resume_key_may_differ(opt.key)) ++computational;
  }
  CHECK(computational == static_cast<int>(o.options.options().size()) - 11);
  for (const char* key : {"run.seed", "run.steps", "model.layers", "compress.fw", "net.bandwidth",
                          "dist.world_size", "dist.backend"})
    CHECK_FALSE(cf::resume_key_may_differ(key));
}

TEST_CASE("preflight: the checks that need no libtorch") {
  TempDir dir;
  SECTION("the defaults pass") {
    Options o(dir.path);
    CHECK_NOTHROW(cf::preflight(o.config, /*resuming=*/false));
  }
  SECTION("a batch that does not split into micro-batches") {
    Options o(dir.path);
    o.options.set("pipeline.batch_size", "10");
    o.options.set("pipeline.microbatches", "4");
    CHECK_THROWS_WITH(cf::preflight(o.config, false), Catch::Contains("does not split"));
  }
  SECTION("an existing run log: refused, unless resumed or overwritten") {
    Options o(dir.path);
    std::ofstream(dir.path / "run.h5") << "x";
    CHECK_THROWS_WITH(cf::preflight(o.config, false), Catch::Contains("--resume"));
    CHECK_NOTHROW(cf::preflight(o.config, /*resuming=*/true));
    o.options.set("run.overwrite", "true");
    CHECK_NOTHROW(cf::preflight(o.config, false));
  }
  SECTION("resuming a log that does not exist") {
    Options o(dir.path);
    CHECK_THROWS_WITH(cf::preflight(o.config, true), Catch::Contains("no such run log"));
  }
  SECTION("a gradient codec with one replica") {
    Options o(dir.path);
    o.options.set("compress.grad", "q8");
    CHECK_THROWS_WITH(cf::preflight(o.config, false), Catch::Contains("pipeline.replicas = 1"));
  }
  SECTION("the device and the model are left to the caller's LibtorchChecks") {
    Options o(dir.path);
    o.options.set("run.device", "cuda:7");
    o.options.set("model.d_model", "65536");
    o.options.set("model.layers", "256");
    CHECK_NOTHROW(cf::preflight(o.config, false));
  }
}

TEST_CASE("timed_net: a shaped clock times the run's dtype, bf16 under autocast") {
  TempDir dir;
  Options o(dir.path);
  o.options.set("net.compute", "shaped:A100");
  CHECK(cf::timed_net(o.config).compute.dtype == "fp32");
  CHECK(cf::timed_net(o.config).compute.autocast.empty());
  o.options.set("run.dtype", "bf16");
  CHECK(cf::timed_net(o.config).compute.dtype == "bf16");
  CHECK(cf::timed_net(o.config).compute.autocast == "on");
  // A dtype or autocast named in the spec is kept.
  o.options.set("net.compute", "shaped:A100:autocast=off");
  CHECK(cf::timed_net(o.config).compute.autocast == "off");
  o.options.set("net.compute", "shaped:A100:dtype=fp16");
  CHECK(cf::timed_net(o.config).compute.dtype == "fp16");
  CHECK(cf::timed_net(o.config).compute.autocast.empty());
}

TEST_CASE("preflight: the libtorch checks run in train's order") {
  TempDir dir;
  std::vector<std::string> ran;
  cf::LibtorchChecks checks;
  checks.device = [&ran](const std::string& device) { ran.push_back("device " + device); };
  checks.model = [&ran](const cf::TrainConfig&) { ran.push_back("model"); };
  SECTION("both, the device first") {
    Options o(dir.path);
    CHECK_NOTHROW(cf::preflight(o.config, false, checks));
    CHECK(ran == std::vector<std::string>{"device cpu", "model"});
  }
  SECTION("the device after the layout, before the outputs; the model last") {
    Options o(dir.path);
    o.options.set("pipeline.batch_size", "10");
    o.options.set("pipeline.microbatches", "4");
    CHECK_THROWS_WITH(cf::preflight(o.config, false, checks), Catch::Contains("does not split"));
    CHECK(ran.empty());
    Options p(dir.path);
    std::ofstream(dir.path / "run.h5") << "x";
    CHECK_THROWS_WITH(cf::preflight(p.config, false, checks), Catch::Contains("--resume"));
    CHECK(ran == std::vector<std::string>{"device cpu"});
  }
  SECTION("a failing device check stops the preflight") {
    Options o(dir.path);
    checks.device = [](const std::string& d) { throw slowpipe::UsageError("run.device = " + d); };
    CHECK_THROWS_WITH(cf::preflight(o.config, false, checks), Catch::Contains("run.device"));
    CHECK(ran.empty());
  }
}
