// The earliest finish time among a flow network's path classes, kept as a
// flat array with a lower bound per block of 64 classes instead of a binary
// heap. A filling changes the finish of most classes at once (on a 16-host
// scenario about 166 of some 200), and a heap paid O(log C) of unpredictable
// sifts for each; here a change is a store and at most a mark, and the
// minimum rescans only the marked blocks. See docs/netmodel.md.
//
// Invariant: block_min_[b] <= every value in block b, with equality unless b
// is marked; values are finish times in seconds (kInfinite: none), never NaN.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace slowpipe::netmodel {

class FinishIndex {
 public:
  static constexpr double kInfinite = std::numeric_limits<double>::infinity();
  static constexpr uint32_t kBlock = 64;

  // Makes room for classes 0..n-1 (new ones at kInfinite).
  void resize(size_t n) {
    value_.resize(n, kInfinite);
    block_min_.resize((n + kBlock - 1) / kBlock, kInfinite);
    marked_.resize(block_min_.size(), 0);
  }
  double value(uint32_t c) const { return value_[c]; }

  void set(uint32_t c, double finish_s) {
    const double old = value_[c];
    value_[c] = finish_s;
    const uint32_t b = c / kBlock;
    if (finish_s < block_min_[b]) {
      block_min_[b] = finish_s;
    } else if (old == block_min_[b] && finish_s != old && !marked_[b]) {
      marked_[b] = 1;  // the minimum may have risen
      dirty_.push_back(b);
    }
  }

  // The smallest value (kInfinite when all are).
  double min() {
    clean();
    double m = kInfinite;
    for (double x : block_min_) m = x < m ? x : m;
    return m;
  }

  // Appends the classes whose value is <= limit, ordered by (value, class).
  void at_most(double limit, std::vector<uint32_t>& out) {
    clean();
    const size_t first = out.size();
    for (uint32_t b = 0; b < block_min_.size(); ++b) {
      if (!(block_min_[b] <= limit)) continue;
      const uint32_t end = std::min<uint32_t>((b + 1) * kBlock, value_.size());
      for (uint32_t c = b * kBlock; c < end; ++c) {
        if (value_[c] <= limit) out.push_back(c);
      }
    }
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
              [this](uint32_t a, uint32_t b) {
                return value_[a] < value_[b] || (value_[a] == value_[b] && a < b);
              });
  }

  void clear() {
    std::fill(value_.begin(), value_.end(), kInfinite);
    std::fill(block_min_.begin(), block_min_.end(), kInfinite);
    std::fill(marked_.begin(), marked_.end(), 0);
    dirty_.clear();
  }

 private:
  void clean() {
    for (uint32_t b : dirty_) {
      const uint32_t end = std::min<uint32_t>((b + 1) * kBlock, value_.size());
      double m0 = kInfinite, m1 = kInfinite;  // two chains
      uint32_t c = b * kBlock;
      for (; c + 1 < end; c += 2) {
        m0 = value_[c] < m0 ? value_[c] : m0;
        m1 = value_[c + 1] < m1 ? value_[c + 1] : m1;
      }
      if (c < end) m0 = value_[c] < m0 ? value_[c] : m0;
      block_min_[b] = m0 < m1 ? m0 : m1;
      marked_[b] = 0;
    }
    dirty_.clear();
  }

  std::vector<double> value_;      // (classes) finish time of each
  std::vector<double> block_min_;  // (blocks)
  std::vector<uint8_t> marked_;    // (blocks) 1: in dirty_
  std::vector<uint32_t> dirty_;
};

}  // namespace slowpipe::netmodel
