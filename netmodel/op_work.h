// The work of one forward compute op, kernel class by kernel class: what the
// shape-aware compute model (`net.compute = shaped:DEVICE`, shaped_model.h;
// docs/compute-clock.md) times. Plain data: model facts (models/facts/
// layer_work.h) fill it from a model's shape; the trace (trace.h) refers to it.
//
// A forward is GEMMs with a weight operand, attention, and memory-bound
// element-wise passes. The backward is derived from the forward by fixed rules
// (docs/compute-clock.md, "Backward"): a weight GEMM [m, k] x [k, n] has an
// input-gradient GEMM (m, k, n) and a weight-gradient GEMM (k, n, m);
// attention has four matmuls of its forward's size (plus a recomputation of
// the forward when fused); an element-wise pass moves twice its elements.
#pragma once

#include <cstdint>
#include <vector>

namespace slowpipe::netmodel {

// count x ([m, k] x [k, n]); 2 m n k FLOPs each. Under autocast
// (docs/compute-clock.md, "Autocast"): `cast_input`, its activation [m, k]
// arrives in fp32 (the residual stream, a LayerNorm's output) and is cast to
// 16 bits first; `cast_output`, its output [m, n] is cast to fp32 for an
// fp32 op after it (the logits for the loss).
struct GemmWork {
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 1;  // kernels of this shape (one per layer)
  bool cast_input = false, cast_output = false;
};

// Scaled dot-product attention of `batch` sequences, `heads` heads of
// `head_dim` channels, q_len queries against kv_len keys; `score_terms` score
// matmuls per head (1; DeBERTa's disentangled attention 3). Causal: a fused
// kernel skips the masked half of the score matrix, a materialised one
// computes and stores all of it.
struct AttentionWork {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  int score_terms = 1;
  bool causal = true;
  int64_t count = 1;  // layers
};

// One element-wise or reduction kernel of an eager forward: `elements` read
// plus written (in activation elements). `fusible`: a point-wise pass that a
// compiler or a hand-written kernel folds into its neighbour (bias, GELU,
// residual add, scaling, masking, copies); the others (norms, softmax) keep
// their traffic in every execution mode.
// `full_precision`: under autocast the pass runs on fp32 elements (the
// residual stream and what autocast keeps in fp32: LayerNorm, log-softmax).
struct PassWork {
  double elements = 0;
  bool fusible = true;
  int64_t count = 1;  // layers
  bool full_precision = false;
};

struct OpWork {
  std::vector<GemmWork> gemms;
  std::vector<AttentionWork> attention;
  std::vector<PassWork> passes;
  // FLOPs of a model part that is not described kernel by kernel (models
  // other than the GPTs); timed as one large GEMM.
  double other_flops = 0;
  int32_t other_kernels = 0;
  // Activation checkpointing: the backward recomputes this forward first.
  bool recompute = false;
};

// 2 m n k x count, summed; attention's forward FLOPs (its two matmuls per
// score term, the causal half skipped only by fused kernels: `fused`).
double gemm_flops(const OpWork& work);
double attention_flops(const AttentionWork& a, bool fused);

}  // namespace slowpipe::netmodel
