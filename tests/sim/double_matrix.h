// A dense row-major matrix of doubles and the few operations the optimizer
// tests' references are written in (test_muon.cpp, test_stiefel.cpp): plain
// loops, no libtorch, so a reference never shares arithmetic with the code
// it checks.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace slowpipe::test {

struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;  // [rows * cols]
  double& at(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  double at(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

inline Mat zeros(int64_t r, int64_t c) {
  return Mat{r, c, std::vector<double>(static_cast<size_t>(r * c), 0.0)};
}

inline Mat transpose(const Mat& a) {
  Mat t = zeros(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  return t;
}

inline Mat matmul(const Mat& a, const Mat& b) {
  Mat c = zeros(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = 0; k < a.cols; ++k)
      for (int64_t j = 0; j < b.cols; ++j) c.at(i, j) += a.at(i, k) * b.at(k, j);
  return c;
}

// x a + y b, elementwise
inline Mat axpby(double x, const Mat& a, double y, const Mat& b) {
  Mat c = a;
  for (size_t i = 0; i < c.v.size(); ++i) c.v[i] = x * a.v[i] + y * b.v[i];
  return c;
}

inline double frobenius(const Mat& a) {
  double s = 0;
  for (double x : a.v) s += x * x;
  return std::sqrt(s);
}

}  // namespace slowpipe::test
