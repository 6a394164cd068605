// One evaluation on the validation split; see evaluation.h.
#include "sim/internal/evaluation.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/errors.h"

namespace slowpipe::sim {
namespace {

// Where an evaluation sits, for messages: "at step 3", "at step 0 (before training)".
std::string eval_at(int64_t step) {
  return "at step " + std::to_string(step) + (step == 0 ? " (before training)" : "");
}

}  // namespace

// One evaluation at `step`: the uncompressed pass, then (eval.compressed) the
// pass through the forward channels' codecs. A non-finite loss in either, or
// a codec refusing a non-finite activation, is a divergence (NonFiniteError),
// as in training: the model after this step no longer computes finite values.
EvalRecord evaluate(StepEngine& engine, const models::Dataset& data, const config::EvalConfig& cfg,
                    int batch_size, int64_t step) {
  const int64_t n = data.size(models::Split::kValidation);
  const int64_t limit = cfg.batches > 0 ? std::min<int64_t>(n, cfg.batches * batch_size) : n;
  const bool lm = engine.task() == models::Task::kLanguageModel;
  EvalRecord row;
  for (int pass = 0; pass < (cfg.compressed ? 2 : 1); ++pass) {
    EvalResult total;
    for (int64_t i = 0; i < limit; i += batch_size) {
      std::vector<int64_t> idx;
      for (int64_t j = i; j < std::min(limit, i + batch_size); ++j) idx.push_back(j);
      EvalResult r;
      try {
        r = engine.evaluate(data.get(models::Split::kValidation, idx), /*compressed=*/pass == 1);
      } catch (const DataError& e) {  // a codec refusing NaN or inf
        if (std::string(e.what()).find("non-finite") == std::string::npos) throw;
        throw NonFiniteError("non-finite activation in the compressed evaluation " + eval_at(step) +
                             ": " + e.what());
      }
      total.loss_sum += r.loss_sum;
      total.correct += r.correct;
      total.items += r.items;
    }
    const double loss = total.items > 0 ? total.loss_sum / total.items : NAN;
    if (total.items > 0 && !std::isfinite(loss)) {
      throw NonFiniteError("non-finite validation loss " + eval_at(step) +
                           (pass == 0 ? " (uncompressed evaluation)" : " (compressed evaluation)"));
    }
    const double metric =
        lm ? loss / std::log(2.0)
           : static_cast<double>(total.correct) / std::max<int64_t>(1, total.items);
    (pass == 0 ? row.loss : row.loss_c) = loss;
    (pass == 0 ? row.metric : row.metric_c) = metric;
  }
  if (!cfg.compressed) {
    row.loss_c = NAN;
    row.metric_c = NAN;
  }
  return row;
}

}  // namespace slowpipe::sim
