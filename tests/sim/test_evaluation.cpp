// sim::evaluate: the validation loss of both passes, and the rule that a
// non-finite value found while evaluating is a divergence (NonFiniteError
// naming the step), like one found while training, while any other error
// passes through unchanged. A scripted engine stands in for the pipeline, so
// each case is exactly the one named.
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.h"
#include "sim/internal/evaluation.h"

namespace {

namespace sim = slowpipe::sim;
namespace cf = slowpipe::config;
namespace models = slowpipe::models;

// What each pass of the scripted engine does.
enum class Pass { kFinite, kNaN, kCodecRefusesNaN, kOtherDataError };

// Answers evaluate() by script: every item of a batch has loss 2 (uncompressed)
// or 3 (compressed), unless its pass is scripted otherwise. Nothing else is used.
class ScriptedEngine : public sim::StepEngine {
 public:
  ScriptedEngine(Pass plain, Pass compressed) : plain_(plain), compressed_(compressed) {}
  sim::EvalResult evaluate(const models::Batch& batch, bool compressed) override {
    ++calls;
    const Pass pass = compressed ? compressed_ : plain_;
    if (pass == Pass::kCodecRefusesNaN) {
      throw slowpipe::DataError(
          "cannot encode with 'topk:0.1': the tensor holds a non-finite value (-nan) at index 0");
    }
    if (pass == Pass::kOtherDataError) throw slowpipe::DataError("message for 'q4': 3 bytes");
    sim::EvalResult r;
    r.items = batch.size();
    const double per_item = pass == Pass::kNaN ? std::numeric_limits<double>::quiet_NaN()
                            : compressed       ? 3.0
                                               : 2.0;
    r.loss_sum = per_item * static_cast<double>(r.items);
    return r;
  }
  models::Task task() const override { return models::Task::kLanguageModel; }
  int calls = 0;

  // Not used by evaluate().
  sim::StepResult train_step(const models::Batch&, int64_t, int64_t) override { return {}; }
  void set_epoch(int) override {}
  void warm_up(const models::Batch&, int) override {}
  int stages() const override { return 2; }
  int replicas() const override { return 1; }
  const std::vector<size_t>& cuts() const override { return cuts_; }
  const models::Model& model() const override { throw std::logic_error("no model"); }
  uint64_t channel_state_bytes() const override { return 0; }
  std::vector<std::string> fw_specs() const override { return {"topk:0.1"}; }
  std::vector<std::string> bw_specs() const override { return {"none"}; }
  void save_state(torch::serialize::OutputArchive&) const override {}
  void load_state(torch::serialize::InputArchive&) override {}

 private:
  Pass plain_, compressed_;
  std::vector<size_t> cuts_ = {0, 1, 2};
};

// `validation` samples of one byte each; no training split.
class TinyData : public models::Dataset {
 public:
  explicit TinyData(int64_t validation) : validation_(validation) {}
  models::DatasetInfo info() const override { return {}; }
  int64_t size(models::Split split) const override {
    return split == models::Split::kValidation ? validation_ : 0;
  }
  models::Batch get(models::Split, const std::vector<int64_t>& indices) const override {
    models::Batch b;
    b.ids = torch::tensor(indices, torch::kLong);
    b.inputs = torch::zeros({b.size(), 1}, torch::kLong);
    b.targets = b.inputs.clone();
    return b;
  }

 private:
  int64_t validation_;
};

std::string divergence_of(ScriptedEngine& engine, const cf::EvalConfig& cfg, int64_t step) {
  const TinyData data(8);
  try {
    (void)sim::evaluate(engine, data, cfg, /*batch_size=*/4, step);
  } catch (const sim::NonFiniteError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Evaluation: both passes' losses, and a non-finite value is a divergence") {
  cf::EvalConfig cfg;  // compressed = true, batches = 8

  SECTION("finite: the mean loss of each pass, bits per byte as the metric") {
    ScriptedEngine engine(Pass::kFinite, Pass::kFinite);
    const TinyData data(8);
    const sim::EvalRecord row = sim::evaluate(engine, data, cfg, 4, /*step=*/7);
    CHECK(row.loss == 2.0);
    CHECK(row.loss_c == 3.0);
    CHECK(row.metric == Approx(2.0 / std::log(2.0)));
    CHECK(engine.calls == 4);  // 2 batches x 2 passes
  }
  SECTION("a NaN uncompressed loss: diverged at that step, the compressed pass never runs") {
    ScriptedEngine engine(Pass::kNaN, Pass::kCodecRefusesNaN);
    const std::string why = divergence_of(engine, cfg, 3);
    CHECK(why == "non-finite validation loss at step 3 (uncompressed evaluation)");
    CHECK(engine.calls == 2);
  }
  SECTION("step 0 is named as before training") {
    ScriptedEngine engine(Pass::kNaN, Pass::kFinite);
    CHECK(divergence_of(engine, cfg, 0).find("at step 0 (before training)") != std::string::npos);
  }
  SECTION("a codec refusing a NaN activation: diverged, with the step and the codec's words") {
    ScriptedEngine engine(Pass::kFinite, Pass::kCodecRefusesNaN);
    const std::string why = divergence_of(engine, cfg, 5);
    CHECK(why.rfind("non-finite activation in the compressed evaluation at step 5: ", 0) == 0);
    CHECK(why.find("cannot encode with 'topk:0.1'") != std::string::npos);
  }
  SECTION("a NaN compressed loss: diverged") {
    ScriptedEngine engine(Pass::kFinite, Pass::kNaN);
    CHECK(divergence_of(engine, cfg, 9) ==
          "non-finite validation loss at step 9 (compressed evaluation)");
  }
  SECTION("another data error is not a divergence: it passes through") {
    ScriptedEngine engine(Pass::kFinite, Pass::kOtherDataError);
    const TinyData data(8);
    CHECK_THROWS_AS(sim::evaluate(engine, data, cfg, 4, 1), slowpipe::DataError);
  }
  SECTION("eval.compressed = false: one pass, loss_c NaN") {
    cfg.compressed = false;
    ScriptedEngine engine(Pass::kFinite, Pass::kCodecRefusesNaN);
    const TinyData data(8);
    const sim::EvalRecord row = sim::evaluate(engine, data, cfg, 4, 1);
    CHECK(row.loss == 2.0);
    CHECK(std::isnan(row.loss_c));
    CHECK(engine.calls == 2);
  }
  SECTION("an empty validation split: NaN losses, no error (the trainer skips evaluating)") {
    ScriptedEngine engine(Pass::kNaN, Pass::kNaN);
    const TinyData empty(0);
    const sim::EvalRecord row = sim::evaluate(engine, empty, cfg, 4, 1);
    CHECK(std::isnan(row.loss));
    CHECK(engine.calls == 0);
  }
}
