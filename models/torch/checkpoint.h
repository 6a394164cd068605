// Checkpoints for the fine-tuning regime: pretrain a model on one corpus, save
// it, then build the same architecture and load it before fine-tuning on another
// corpus (model.init_from). Optimizer state is not saved: fine-tuning starts a
// fresh optimizer, as in the AQ-SGD and Rudakov et al. set-ups.
//
// A checkpoint is a checked file (models/torch/checked_file.h) of kind
// "slowpipe.model", written atomically, whose CRC-32 covers everything:
//   metadata: JSON {"model.name": "gpt", "blocks": 6, "parameters": 866816,
//              "shape": {"model.d_model": "128", ...}} (Model::shape_config)
//   payload:  a libtorch serialize archive with every block's parameters and
//             buffers under "b<block>__<name>" keys.
// Files of the format before the checksum (bare libtorch archives) are refused
// with a message saying to re-create them: nothing in them can be verified.
#pragma once

#include <string>

#include "models/torch/model.h"
#include "models/facts/model_config.h"

namespace slowpipe::models {

constexpr const char* kModelCheckpointKind = "slowpipe.model";

// Writes every parameter and buffer of `model` and its shape config to `path`,
// atomically. Throws UsageError when the file cannot be created.
void save_checkpoint(const Model& model, const std::string& path);

// Overwrites the parameters and buffers of `model` with those stored in `path`.
// All checks run before any parameter is overwritten, and name the file:
// - UsageError (exit 2): the file is missing, a directory, a device, a FIFO or
//   unreadable (key model.init_from); it holds another kind of slowpipe file or
//   another model; its shape config differs from the model's (every differing
//   key named: "written for model.d_model=128, this run has 64"); a parameter is
//   missing, extra or of another shape.
// - DataError (exit 3): the file is not a slowpipe file, is truncated, has a
//   checksum mismatch (damaged bytes), or has the old format without checksum.
void load_checkpoint(Model& model, const std::string& path);

// The cheap up-front form of load_checkpoint's checks, for a config before any
// model is built: the file's header, kind, model.name and model.* shape keys
// (not the data.* keys, not the checksum of the body). Same errors.
void check_checkpoint_config(const ModelConfig& cfg, const std::string& path);

}  // namespace slowpipe::models
