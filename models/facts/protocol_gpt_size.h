// Parameter counts of protocol-gpt, dense and in the ReparamSSN record's
// subspace form, as plain arithmetic (no libtorch), and the parameter
// matching the record uses: a subspace model's freed parameters go to MLP
// width (docs/benchmark.md). The model (models/torch/gpt_protocol.cpp)
// reports its footprint from here, and tests check the count against the
// built model and against the record's own totals (203,828,352 dense,
// 203,822,240 at width 11,292; docs/benchmark.md).
#pragma once

#include <cstdint>

namespace slowpipe::models {

struct ProtocolGptSize {
  int64_t d_model = 0;   // C
  int64_t layers = 0;    // transformer blocks L
  int64_t vocab = 256;   // V
  int64_t ffn = 0;       // MLP hidden width F; 0 = 4 C
  int64_t subspace = 0;  // k; 0 = dense
};

// Dense: embedding V C + gains C, per block 4 C^2 + 2 C F + F + 7 C, head
// C + V C + V. Subspace form (k > 0): embedding V k (no gains), blocks 1..L-1
// write through k outputs (3 C^2 + C F + k F + F + k C + 2 k + 5 C each), the
// last block is dense, the head as dense.
int64_t protocol_gpt_parameters(const ProtocolGptSize& size);

// The largest MLP width F (the same in every block, as in the record) whose
// subspace model (`size` with ffn = F) has no more parameters than the dense
// model of the same d_model, layers and vocab with width 4 C. 0 when none.
int64_t matched_ffn(ProtocolGptSize size);

}  // namespace slowpipe::models
