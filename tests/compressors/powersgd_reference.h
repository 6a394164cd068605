// A naive double-precision reference of one PowerSGD step (docs/codec-spec.md,
// "PowerSGD"), written apart from compressors/codecs/powersgd.cpp: plain loops,
// classical Gram-Schmidt done twice on every column (the codec does modified
// Gram-Schmidt, the second pass only after a large cancellation), the same
// documented 1e-10 rule for dependent columns, and the re-seeding of all-zero
// columns of Q. `Rule::kNormOnly` is the rule before issue 23 (only a column of
// norm exactly 0 is 0, one pass), kept as the tests' control.
// Left out: fp16 rounding of the wire values and the sent-as-is path.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "compressors/codecs/internal/powersgd.h"

namespace slowpipe::compressors::naive {

using Matrix = std::vector<double>;  // row-major

struct PowerStep {
  Matrix p_hat, q, approx;  // [n, r], [m, r], [n, m]
};

enum class Rule { kDocumented, kNormOnly };

// Columns of q0 [m, r] that are all zero replaced by the seeded init's.
inline Matrix reseed(const Matrix& q0, uint64_t seed, int64_t m, int r) {
  const std::vector<float> init = powersgd_init(seed, m, r);
  Matrix q = q0;
  for (int k = 0; k < r; ++k) {
    double sum_abs = 0;
    for (int64_t j = 0; j < m; ++j) sum_abs += std::fabs(q[j * r + k]);
    if (sum_abs == 0)
      for (int64_t j = 0; j < m; ++j) q[j * r + k] = init[j * r + k];
  }
  return q;
}

// One step on M [n, m] from Q0 [m, r] (already re-seeded).
inline PowerStep power_step(const Matrix& mat, int64_t n, int64_t m, const Matrix& q0, int r,
                            Rule rule = Rule::kDocumented) {
  PowerStep out;
  Matrix p(n * r, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < r; ++k)
      for (int64_t j = 0; j < m; ++j) p[i * r + k] += mat[i * m + j] * q0[j * r + k];
  out.p_hat.assign(n * r, 0.0);
  for (int k = 0; k < r; ++k) {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = p[i * r + k];
    double before = 0;
    for (double x : v) before += x * x;
    before = std::sqrt(before);
    for (int pass = 0; pass < (rule == Rule::kDocumented ? 2 : 1); ++pass) {
      // Classical: every projection from the same vector, then all subtracted.
      std::vector<double> dots(k, 0.0);
      for (int l = 0; l < k; ++l)
        for (int64_t i = 0; i < n; ++i) dots[l] += out.p_hat[i * r + l] * v[i];
      for (int l = 0; l < k; ++l)
        for (int64_t i = 0; i < n; ++i) v[i] -= dots[l] * out.p_hat[i * r + l];
    }
    double norm = 0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    const bool zero = rule == Rule::kDocumented ? norm <= 1e-10 * before : norm == 0;
    for (int64_t i = 0; i < n; ++i) out.p_hat[i * r + k] = zero ? 0.0 : v[i] / norm;
  }
  out.q.assign(m * r, 0.0);
  for (int64_t j = 0; j < m; ++j)
    for (int k = 0; k < r; ++k)
      for (int64_t i = 0; i < n; ++i) out.q[j * r + k] += mat[i * m + j] * out.p_hat[i * r + k];
  out.approx.assign(n * m, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int k = 0; k < r; ++k) out.approx[i * m + j] += out.p_hat[i * r + k] * out.q[j * r + k];
  return out;
}

}  // namespace slowpipe::compressors::naive
