// Parameter counts of the two GPTs (`gpt`, `protocol-gpt`), dense and with a
// subspace (model.subspace), as plain arithmetic (no libtorch), and the
// parameter matching the Protocol NanoGPT ReparamSSN record uses: a subspace
// model's freed parameters go to MLP width (model.ffn; docs/benchmark.md).
// The models (models/torch/gpt.cpp, gpt_protocol.cpp) report their footprint
// from here, and tests check the counts against the built models and against
// the record's own totals (203,828,352 dense, 203,822,240 at width 11,292).
#pragma once

#include <cstdint>

namespace slowpipe::models {

// Which of the two block layouts (the models' own footprint functions pick it).
enum class GptLayout { kGpt, kProtocol };

struct GptSize {
  GptLayout layout = GptLayout::kGpt;  // gpt or protocol-gpt
  int64_t d_model = 0;                 // C
  int64_t layers = 0;                  // transformer blocks L
  int64_t vocab = 256;                 // V
  int64_t seq_len = 64;                // T (gpt: its position table)
  int64_t ffn = 0;                     // MLP hidden width F; 0 = 4 C
  int64_t subspace = 0;                // k; 0 = dense
  int64_t extra = 0;  // parameters learned bottlenecks add (gpt; bottleneck_spec.h)
};

// gpt: embedding (V + T) w, per block 3 C^2 + 7 C + (C + 1) w + w + C F + F +
// F w, head 2 C + V C, with w = k (or C when dense); every block is
// constrained. protocol-gpt dense: embedding V C + C, per block 4 C^2 + 2 C F
// + F + 7 C, head C + V C + V; with k: embedding V k (no gains), blocks
// 1..L-1 write through k outputs (3 C^2 + C F + k F + F + k C + 2 k + 5 C
// each), the last block dense, the head as dense.
int64_t gpt_parameters(const GptSize& size);

// The largest MLP width F (the same in every block) whose model (`size` with
// ffn = F) has no more parameters than the dense model of the same shape with
// width 4 C. 0 when none.
int64_t matched_ffn(GptSize size);

}  // namespace slowpipe::models
