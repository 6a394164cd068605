// The forward work of a stage of a model shape, kernel class by kernel class
// (netmodel/op_work.h), for the shape-aware compute model
// (docs/compute-clock.md, "A transformer layer"). Part of model_facts.
//
// Per transformer layer, N = micro-batch x seq tokens, width d, MLP width f:
//   GEMMs      QKV (N, 3d, d), output projection (N, d, d), MLP (N, f, d)
//              and (N, d, f), one kernel each;
//   attention  micro-batch x heads, seq x seq, head width d / heads, causal;
//   passes     (elements read + written) two LayerNorms 2 N d each
//              (reductions), and the point-wise passes an eager framework
//              runs: the attention output's transpose copy 2 N d, two residual
//              adds 3 N d each, GELU 2 N f.
// The first stage adds the embedding gather 2 N d and the position add 3 N d;
// the last the final LayerNorm 2 N d, the LM head GEMM (N, V, d) and the
// cross-entropy's log-softmax 2 N V (a reduction). Biases ride in their
// GEMM's epilogue; dropout is off.
#pragma once

#include "models/facts/model_shape.h"
#include "netmodel/op_work.h"

namespace slowpipe::models {

netmodel::OpWork forward_work(const ModelShape& shape, int stage);

}  // namespace slowpipe::models
