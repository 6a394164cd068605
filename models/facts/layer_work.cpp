// The forward work of a stage of a model shape (layer_work.h).
#include "models/facts/layer_work.h"

namespace slowpipe::models {

void add_embedding_work(netmodel::OpWork& w, int64_t tokens, int64_t d) {
  const double nd = static_cast<double>(tokens * d);
  w.passes.push_back({2 * nd, false, 1, true});  // gather (fp32 tables)
  w.passes.push_back({3 * nd, true, 1, true});   // + positions
}

namespace {
int64_t share(int64_t x, int64_t tp) {
  return tp > 1 ? (x + tp - 1) / tp : x;
}
}  // namespace

void add_transformer_work(netmodel::OpWork& w, const LayerDims& l, int64_t count) {
  const int64_t n = l.samples * l.seq, d = l.d_model, t = l.tp;
  const double nd = static_cast<double>(n * d);
  const int64_t kv = l.kv_width > 0 ? l.kv_width : d, f = share(l.ffn, t);
  w.gemms.push_back({n, share(d + 2 * kv, t), d, count, true});  // from LayerNorm 1
  w.gemms.push_back({n, d, share(d, t), count});
  w.gemms.push_back({n, f, d, l.gated ? 2 * count : count, true});  // from LayerNorm 2
  w.gemms.push_back({n, d, f, count});
  w.attention.push_back(
      {l.samples, share(l.heads, t), l.seq, l.seq, d / l.heads, l.score_terms, true, count});
  w.passes.push_back({2 * nd, false, count, true});  // LayerNorm 1
  w.passes.push_back({2 * nd, false, count, true});  // LayerNorm 2
  w.passes.push_back({2 * static_cast<double>(n * share(d, t)), true,
                      count});                      // transpose copy of the attention output
  w.passes.push_back({3 * nd, true, count, true});  // residual add
  w.passes.push_back({3 * nd, true, count, true});  // residual add
  const double act = (l.gated ? 3.0 : 2.0) * static_cast<double>(n * f);
  w.passes.push_back({act, true, count});  // GELU, or SiLU(gate) x up
}

void add_lm_head_work(netmodel::OpWork& w, int64_t tokens, int64_t d, int64_t vocab, int64_t tp) {
  const int64_t v = share(vocab, tp);
  w.gemms.push_back({tokens, v, d, 1, true, true});  // the logits go to the fp32 loss
  w.passes.push_back({2.0 * static_cast<double>(tokens * d), false, 1, true});  // final LayerNorm
  w.passes.push_back({2.0 * static_cast<double>(tokens * v), false, 1, true});  // log-softmax
}

netmodel::OpWork forward_work(const ModelShape& m, int stage) {
  netmodel::OpWork w;
  const int64_t layers = layers_of_stage(m, stage);
  const int64_t tokens = static_cast<int64_t>(m.microbatch_size) * m.seq;
  if (stage == 0) add_embedding_work(w, tokens, m.hidden);
  if (layers > 0) {
    add_transformer_work(w,
                         {m.microbatch_size, m.seq, m.hidden, attention_heads(m), mlp_width(m),
                          m.score_terms, kv_width(m), m.gated_mlp, m.tensor_parallel},
                         layers);
  }
  if (m.lm_head && stage == m.stages - 1)
    add_lm_head_work(w, tokens, m.hidden, m.vocab, m.tensor_parallel);
  w.recompute = m.recompute;
  return w;
}

}  // namespace slowpipe::models
