// The GPTs' parameter counts; see gpt_size.h.
#include "models/facts/gpt_size.h"

namespace slowpipe::models {
namespace {

int64_t width(const GptSize& s) {
  return s.ffn > 0 ? s.ffn : 4 * s.d_model;
}

// protocol-gpt: q, k, v and the attention projection, the MLP, two gains;
// `out` outputs per writer (C dense, k in the subspace form).
int64_t protocol_block(int64_t c, int64_t f, int64_t out) {
  return 3 * (c * c + c) + (c * out + out) + (c * f + f) + (f * out + out) + 2 * c;
}

int64_t protocol_gpt(const GptSize& s) {
  const int64_t c = s.d_model, v = s.vocab, f = width(s), k = s.subspace;
  const int64_t head = c + v * c + v;
  if (k == 0) return v * c + c + s.layers * protocol_block(c, f, c) + head;
  return v * k + (s.layers - 1) * protocol_block(c, f, k) + protocol_block(c, f, c) + head;
}

// gpt: qkv with bias, proj and fc2 writing w outputs with bias, fc1, two LayerNorms.
int64_t gpt(const GptSize& s) {
  const int64_t c = s.d_model, v = s.vocab, f = width(s), w = s.subspace > 0 ? s.subspace : c;
  const int64_t block = 3 * c * c + 3 * c + (c * w + w) + 4 * c + (c * f + f) + (f * w + w);
  return (v + s.seq_len) * w + s.layers * block + 2 * c + v * c;
}

}  // namespace

int64_t gpt_parameters(const GptSize& size) {
  return (size.layout == GptLayout::kProtocol ? protocol_gpt(size) : gpt(size)) + size.extra;
}

int64_t matched_ffn(GptSize size) {
  GptSize dense = size;
  dense.subspace = 0;
  dense.ffn = 0;
  dense.extra = 0;
  const int64_t cap = gpt_parameters(dense);
  // The count grows with F by a fixed step: solve, then settle on the boundary.
  size.ffn = 1;
  const int64_t at1 = gpt_parameters(size);
  size.ffn = 2;
  const int64_t step = gpt_parameters(size) - at1;
  if (at1 > cap || step <= 0) return 0;
  int64_t f = 1 + (cap - at1) / step;
  size.ffn = f;
  while (f > 0 && gpt_parameters(size) > cap) size.ffn = --f;
  return f;
}

}  // namespace slowpipe::models
