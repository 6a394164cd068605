// Checkpoints for the fine-tuning regime: pretrain a model on one corpus, save
// it, then build the same architecture and load it before fine-tuning on another
// corpus (model.init_from). Files are libtorch serialize archives holding the
// registry name of the model and every block's parameters and buffers under
// "b<block>__<name>" keys. Optimizer state is not saved: fine-tuning starts a
// fresh optimizer, as in the AQ-SGD and Rudakov et al. set-ups.
#pragma once

#include <string>

#include "models/model.h"

namespace slowpipe::models {

// Writes every parameter and buffer of `model` to `path`. Throws UsageError when
// the file cannot be written.
void save_checkpoint(const Model& model, const std::string& path);

// Overwrites the parameters and buffers of `model` with those stored in `path`.
// Throws UsageError naming the file (and the parameter) when the file is
// missing, holds another model, lacks a parameter, has one the model lacks, or a
// shape differs; DataError when the file is not a readable archive. The model is
// left unchanged when any check fails.
void load_checkpoint(Model& model, const std::string& path);

}  // namespace slowpipe::models
