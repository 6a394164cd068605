// The forward work of a stage of a model shape (layer_work.h).
#include "models/facts/layer_work.h"

namespace slowpipe::models {

netmodel::OpWork forward_work(const ModelShape& m, int stage) {
  netmodel::OpWork w;
  const int64_t layers = layers_of_stage(m, stage);
  const int64_t n = static_cast<int64_t>(m.microbatch_size) * m.seq, d = m.hidden, f = mlp_width(m),
                heads = attention_heads(m);
  const double nd = static_cast<double>(n * d);
  if (layers > 0) {
    w.gemms = {{n, 3 * d, d, layers}, {n, d, d, layers}, {n, f, d, layers}, {n, d, f, layers}};
    w.attention = {
        {m.microbatch_size, heads, m.seq, m.seq, d / heads, m.score_terms, true, layers}};
    w.passes = {{2 * nd, false, layers}, {2 * nd, false, layers},
                {2 * nd, true, layers},  {3 * nd, true, layers},
                {3 * nd, true, layers},  {2.0 * static_cast<double>(n * f), true, layers}};
  }
  if (stage == 0) {
    w.passes.push_back({2 * nd, false, 1});
    w.passes.push_back({3 * nd, true, 1});
  }
  if (m.lm_head && stage == m.stages - 1) {
    w.gemms.push_back({n, m.vocab, d, 1});
    w.passes.push_back({2 * nd, false, 1});
    w.passes.push_back({2.0 * static_cast<double>(n * m.vocab), false, 1});
  }
  w.recompute = m.recompute;
  return w;
}

}  // namespace slowpipe::models
