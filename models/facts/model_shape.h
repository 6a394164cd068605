// Model shapes for what-if timing without training: layer count, widths and
// the pipeline layout of the papers' set-ups, with analytic FLOPs. Part of
// library slowpipe::model_facts (plain C++), the one torch-free source of
// model facts: `slowpipe timing` (whatif/) sizes its steps from these shapes,
// and their kernel rule is the one the engine applies to a built model.
//
// FLOPs of a transformer layer per token, forward (2 FLOPs per multiply-add):
// 2 x (4 d^2 [QKV + output projections] + 2 r d^2 [MLP with ratio r; 2 d f
// for an explicit MLP width f]) plus
// (grouped-query attention with kv of the heads' widths: QKV is d (d + 2 kv);
// a gated MLP, SwiGLU-style, has three d x f matrices: 3 d f) plus
// attention 2 T d (A V) + 2 T d k (scores; k = 1, or 3 for DeBERTa's
// disentangled attention: content-content, content-position,
// position-content); the LM head adds 2 d V on the last stage; backward = 2 x
// forward. Leaves out: layer norms, softmax, embedding lookups (all small).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/registry.h"

namespace slowpipe::models {

struct ModelShape {
  std::string name;
  std::string description;  // one line
  int layers = 48;
  int64_t hidden = 1600;
  int64_t seq = 1024;
  int64_t vocab = 50257;
  int mlp_ratio = 4;
  int64_t mlp_width = 0;   // MLP hidden width; 0: mlp_ratio x hidden
  int score_terms = 1;     // attention score matmuls per head
  int heads = 0;           // attention heads; 0: hidden / 64
  int kv_heads = 0;        // key/value heads (grouped-query attention); 0: every head
  bool gated_mlp = false;  // gate and up projections (SwiGLU) before the down projection
  // Tensor-parallel degree t: each GPU holds 1/t of every layer's matrices
  // and heads and of the vocabulary (Megatron's split; LayerNorms and
  // residuals stay whole). Only `slowpipe clock` sets it (1 elsewhere).
  int tensor_parallel = 1;
  // Activation checkpointing: every backward recomputes its forward first.
  bool recompute = false;
  bool lm_head = true;  // vocabulary projection on the last stage
  // Values per token crossing a cut: k for a residual stream confined to a
  // fixed k-dim subspace (Protocol Models; docs/models.md, model.subspace);
  // 0 = hidden. FLOPs and parameters stay the unconstrained model's.
  int64_t subspace = 0;
  int stages = 8;
  int microbatch_size = 1;  // samples per micro-batch
  int batch = 32;           // samples per replica and step
  // Layers of each stage (sums to `layers`, one entry per stage); empty: as
  // even as possible, the first stages taking the remainder.
  std::vector<int> stage_layers;
};

const Registry<ModelShape>& model_shapes();
// Throws UsageError naming `key` and listing the shapes.
const ModelShape& find_model_shape(const std::string& key, const std::string& name);

// Throws UsageError naming the shape unless 1 <= stages <= layers, the batch
// is a positive multiple of the micro-batch size and stage_layers (if given)
// has one entry >= 1 per stage summing to the layers.
void check_model_shape(const ModelShape& shape);
// Values per token a boundary message carries: subspace, or hidden when 0.
inline int64_t boundary_width(const ModelShape& shape) {
  return shape.subspace > 0 ? shape.subspace : shape.hidden;
}
// Layers of stage s: stage_layers[s], or the even split (the first stages take
// the remainder).
int layers_of_stage(const ModelShape& shape, int stage);
// "6,6,6,6,7,7,7,3".
std::string describe_stage_layers(const ModelShape& shape);
// The MLP's hidden width: mlp_width, or mlp_ratio x hidden when 0.
inline int64_t mlp_width(const ModelShape& shape) {
  return shape.mlp_width > 0 ? shape.mlp_width : shape.mlp_ratio * shape.hidden;
}
// Attention heads: heads, or hidden / 64 (at least 1) when 0.
inline int64_t attention_heads(const ModelShape& shape) {
  if (shape.heads > 0) return shape.heads;
  return shape.hidden >= 64 ? shape.hidden / 64 : 1;
}
// Width of the keys (and of the values): kv_heads x head width, or hidden
// when kv_heads is 0.
inline int64_t kv_width(const ModelShape& shape) {
  if (shape.kv_heads <= 0) return shape.hidden;
  return shape.kv_heads * (shape.hidden / attention_heads(shape));
}
// Forward FLOPs of one micro-batch on stage s (on one GPU of its tensor-
// parallel group).
double forward_flops(const ModelShape& shape, int stage);
// Parameters of stage s (12 d^2 per layer for r = 4, plus embeddings on the
// first stage; on one GPU of its tensor-parallel group).
double stage_parameters(const ModelShape& shape, int stage);
// Kernels of one forward of stage s, by the rule the pipeline engine applies
// to a real model (docs/netmodel.md, "Launch floor"): two per parametrised
// layer (its own kernel and one element-wise kernel beside it), so 12 per
// transformer layer (two LayerNorms, QKV, output projection, two MLP
// matrices), 4 for the token and position embeddings on the first stage and
// 4 for the LM head (LayerNorm, projection) on the last.
int forward_kernels(const ModelShape& shape, int stage);
// Parameter tensors of stage s (one optimizer kernel each): a weight and a
// bias per parametrised layer of a transformer layer (12), the two embedding
// tables on the first stage, the final LayerNorm's two on the last.
int parameter_tensors(const ModelShape& shape, int stage);

}  // namespace slowpipe::models
