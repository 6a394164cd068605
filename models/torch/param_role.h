// What a parameter is to an optimizer that treats parameters differently
// (optim.name = muon, and every optimizer's Stiefel step for kStiefel,
// docs/optimizers.md): a model declares the role of each
// of its parameters when it registers them (Block::set_role, models/model.h);
// the optimizer reads the roles and never guesses from names or shapes. Plain
// C++, so sim/'s optimizer headers need no libtorch module header.
#pragma once

namespace slowpipe::models {

enum class ParamRole {
  kOther,         // gains, biases and anything not declared: AdamW's scalar group
  kHiddenMatrix,  // a weight matrix inside the network (attention, MLP): Muon's
  kEmbedding,     // an input embedding table
  kHead,          // the output (LM head, classifier) weight
  // a [d, k] matrix (k <= d) with orthonormal columns, kept on the Stiefel
  // manifold by the optimizer's Stiefel step whatever optim.name is
  // (sim/internal/stiefel.h, docs/optimizers.md "The Stiefel step")
  kStiefel,
};

}  // namespace slowpipe::models
