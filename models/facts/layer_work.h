// The forward work of a stage of a model shape, kernel class by kernel class
// (netmodel/op_work.h), for the shape-aware compute model
// (docs/compute-clock.md, "A transformer layer"). Part of model_facts.
//
// Per transformer layer, N = micro-batch x seq tokens, width d, MLP width f:
//   GEMMs      QKV (N, 3d, d), output projection (N, d, d), MLP (N, f, d)
//              and (N, d, f), one kernel each; with grouped-query attention
//              (key/value width kv) QKV is (N, d + 2 kv, d); a gated MLP
//              (SwiGLU) has two (N, f, d) GEMMs, gate and up, and its
//              activation reads both and writes one: 3 N f in place of GELU's;
//   attention  micro-batch x heads, seq x seq, head width d / heads, causal;
//   passes     (elements read + written) two LayerNorms 2 N d each
//              (reductions), and the point-wise passes an eager framework
//              runs: the attention output's transpose copy 2 N d, two residual
//              adds 3 N d each, GELU 2 N f.
// The first stage adds the embedding gather 2 N d and the position add 3 N d;
// the last the final LayerNorm 2 N d, the LM head GEMM (N, V, d) and the
// cross-entropy's log-softmax 2 N V (a reduction). Biases ride in their
// GEMM's epilogue; dropout is off. Under tensor parallelism of degree t (one
// GPU's share): the QKV and MLP-in GEMMs' outputs, the output projection's
// and MLP-out's inputs, the heads, the transpose copy, the activation and
// the vocabulary are 1/t (rounded up); LayerNorms and residuals stay whole.
#pragma once

#include "models/facts/model_shape.h"
#include "netmodel/op_work.h"

namespace slowpipe::models {

netmodel::OpWork forward_work(const ModelShape& shape, int stage);

// The pieces, which the trainer's GPT blocks describe themselves with
// (models/torch/gpt.cpp): the embedding of `tokens` tokens of width d, `count`
// transformer layers of one shape, and the LM head.
struct LayerDims {
  int64_t samples = 1, seq = 1, d_model = 1, heads = 1, ffn = 4;
  int score_terms = 1;
  int64_t kv_width = 0;  // keys' (and values') width; 0: d_model
  bool gated = false;    // SwiGLU-style MLP
  int64_t tp = 1;        // tensor-parallel degree: 1/tp of the matrices and heads
};
void add_embedding_work(netmodel::OpWork& work, int64_t tokens, int64_t d);
void add_transformer_work(netmodel::OpWork& work, const LayerDims& layer, int64_t count);
// `tp`: the vocabulary split over a tensor-parallel group.
void add_lm_head_work(netmodel::OpWork& work, int64_t tokens, int64_t d, int64_t vocab,
                      int64_t tp = 1);

}  // namespace slowpipe::models
