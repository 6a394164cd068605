// FinishIndex (the flow network's earliest-finish lookup) against a plain
// array searched in full: random sets, raises and clears over several block
// sizes' worth of classes, with ties; `at_most` must list exactly the classes
// at or under the limit, ordered by (finish, class) as the heap it replaced
// popped them. A control (a raise of a block's minimum left unmarked) fails.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "netmodel/internal/finish_index.h"

namespace nm = slowpipe::netmodel;

namespace {

constexpr double kInf = nm::FinishIndex::kInfinite;

struct Naive {
  std::vector<double> v;
  double min() const {
    double m = kInf;
    for (double x : v) m = std::min(m, x);
    return m;
  }
  std::vector<uint32_t> at_most(double limit) const {
    std::vector<uint32_t> out;
    for (uint32_t c = 0; c < v.size(); ++c) {
      if (v[c] <= limit) out.push_back(c);
    }
    std::stable_sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) { return v[a] < v[b]; });
    return out;
  }
};

// A value from a small grid (ties are common) or infinity.
double draw(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> pick(0, 40);
  const int k = pick(rng);
  return k == 40 ? kInf : 0.25 * k;
}

// Runs `steps` random operations on both; returns the first step at which they
// disagree (or -1). `unmarked_raise` is the control's fault.
int first_disagreement(uint64_t seed, size_t classes, int steps) {
  std::mt19937_64 rng(seed);
  nm::FinishIndex index;
  Naive naive;
  index.resize(classes);
  naive.v.assign(classes, kInf);
  std::uniform_int_distribution<uint32_t> which(0, static_cast<uint32_t>(classes - 1));
  for (int step = 0; step < steps; ++step) {
    const int op = static_cast<int>(rng() % 20);
    if (op == 0) {  // grow, as new classes appear
      classes += rng() % 70;
      index.resize(classes);
      naive.v.resize(classes, kInf);
      which = std::uniform_int_distribution<uint32_t>(0, static_cast<uint32_t>(classes - 1));
    } else if (op == 1) {
      index.clear();
      std::fill(naive.v.begin(), naive.v.end(), kInf);
    } else {
      // Batches of changes between reads, as a filling changes many classes.
      for (int k = static_cast<int>(rng() % 9); k >= 0; --k) {
        const uint32_t c = which(rng);
        const double x = draw(rng);
        index.set(c, x);
        naive.v[c] = x;
      }
    }
    if (index.min() != naive.min()) return step;
    {
      const uint32_t c = which(rng);
      if (index.value(c) != naive.v[c]) return step;
    }
    const double limit = draw(rng);
    std::vector<uint32_t> got{7};  // appended after what is there
    index.at_most(limit, got);
    std::vector<uint32_t> want{7};
    const std::vector<uint32_t> naive_list = naive.at_most(limit);
    want.insert(want.end(), naive_list.begin(), naive_list.end());
    if (got != want) return step;
  }
  return -1;
}

}  // namespace

TEST_CASE("FinishIndex: min and at_most agree with a full search") {
  for (size_t classes : {1, 5, 63, 64, 65, 200, 1000}) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      INFO("classes " << classes << " seed " << seed);
      CHECK(first_disagreement(seed * 7919 + classes, classes, 3000) == -1);
    }
  }
}

TEST_CASE("FinishIndex: a raised minimum is found again; values read back") {
  nm::FinishIndex index;
  index.resize(130);
  CHECK(index.min() == kInf);
  index.set(70, 2.0);
  index.set(71, 1.0);
  index.set(5, 3.0);
  CHECK(index.min() == 1.0);
  index.set(71, 4.0);  // block 1's minimum rises to 2.0
  CHECK(index.min() == 2.0);
  index.set(70, kInf);
  CHECK(index.min() == 3.0);
  CHECK(index.value(71) == 4.0);
  std::vector<uint32_t> due;
  index.at_most(4.0, due);
  CHECK(due == std::vector<uint32_t>{5, 71});
  index.set(5, 4.0);  // a tie goes to the lower class
  due.clear();
  index.at_most(4.0, due);
  CHECK(due == std::vector<uint32_t>{5, 71});
  index.clear();
  CHECK(index.min() == kInf);
}
