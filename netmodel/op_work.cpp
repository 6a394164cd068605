// FLOPs of the work of a compute op (op_work.h).
#include "netmodel/op_work.h"

namespace slowpipe::netmodel {

double gemm_flops(const OpWork& work) {
  double f = 0;
  for (const auto& g : work.gemms) {
    f += 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
         static_cast<double>(g.count);
  }
  return f;
}

double attention_flops(const AttentionWork& a, bool fused) {
  // Per head: score_terms score matmuls [q, dh] x [dh, kv] and one [q, kv] x [kv, dh].
  const double per_head = 2.0 * static_cast<double>(a.q_len) * static_cast<double>(a.kv_len) *
                          static_cast<double>(a.head_dim) * (a.score_terms + 1);
  const double causal = fused && a.causal ? 0.5 : 1.0;
  return per_head * causal * static_cast<double>(a.batch * a.heads * a.count);
}

}  // namespace slowpipe::netmodel
