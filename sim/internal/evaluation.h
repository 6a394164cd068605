// One evaluation of a training run on the validation split: the loss and
// metric (bits/byte for a language model, accuracy for a classifier) without
// compression, and again through the forward channels' codecs. What it leaves
// out: when to evaluate and where the row goes (sim/trainer.cpp), the columns
// (sim/internal/log_tables.h).
#pragma once

#include <cstdint>

#include "config/section_configs.h"
#include "models/torch/dataset.h"
#include "sim/engine.h"
#include "sim/internal/log_tables.h"

namespace slowpipe::sim {

// Evaluates `engine` after `step` optimizer steps on the first cfg.batches
// batches of `batch_size` validation samples (all of them for 0); with
// cfg.compressed, a second pass sends every boundary through its forward
// codec (loss_c, metric_c; NaN otherwise). A non-finite loss in either pass,
// or a codec refusing a non-finite activation, throws NonFiniteError naming
// the step, as a divergence in training does: the model no longer computes
// finite values. An empty validation split gives NaN losses, not an error.
EvalRecord evaluate(StepEngine& engine, const models::Dataset& data, const config::EvalConfig& cfg,
                    int batch_size, int64_t step);

}  // namespace slowpipe::sim
