// protocol-gpt's parameter counts; see protocol_gpt_size.h.
#include "models/facts/protocol_gpt_size.h"

namespace slowpipe::models {
namespace {

int64_t width(const ProtocolGptSize& s) {
  return s.ffn > 0 ? s.ffn : 4 * s.d_model;
}

// q, k, v and the attention projection, the MLP, two gains; `out` outputs per
// writer (C dense, k in the subspace form).
int64_t block_parameters(int64_t c, int64_t f, int64_t out) {
  return 3 * (c * c + c) + (c * out + out) + (c * f + f) + (f * out + out) + 2 * c;
}

}  // namespace

int64_t protocol_gpt_parameters(const ProtocolGptSize& s) {
  const int64_t c = s.d_model, v = s.vocab, f = width(s), k = s.subspace;
  const int64_t head = c + v * c + v;
  if (k == 0) return v * c + c + s.layers * block_parameters(c, f, c) + head;
  return v * k + (s.layers - 1) * block_parameters(c, f, k) + block_parameters(c, f, c) + head;
}

int64_t matched_ffn(ProtocolGptSize size) {
  ProtocolGptSize dense = size;
  dense.subspace = 0;
  dense.ffn = 0;
  const int64_t cap = protocol_gpt_parameters(dense);
  // The count grows with F by a fixed step: solve, then settle on the boundary.
  size.ffn = 1;
  const int64_t at1 = protocol_gpt_parameters(size);
  size.ffn = 2;
  const int64_t step = protocol_gpt_parameters(size) - at1;
  if (at1 > cap || step <= 0) return 0;
  int64_t f = 1 + (cap - at1) / step;
  size.ffn = f;
  while (f > 0 && protocol_gpt_parameters(size) > cap) size.ffn = --f;
  return f;
}

}  // namespace slowpipe::models
