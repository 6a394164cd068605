// TopK / RandK: selection against the naive reference, message bytes against
// the naive index coding, composition with a value quantizer.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "compressors/codec.h"
#include "compressors/sparsifier.h"
#include "compressors/index_coding.h"
#include "compressors/topk_select.h"
#include "naive_reference.h"

namespace sc = slowpipe::compressors;

namespace {
// kind 0: normal, 1: many exact zeros (ReLU-like), 2: few distinct values (ties), 3: constant
std::vector<float> make_row(int64_t m, int kind, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(m);
  for (int64_t i = 0; i < m; ++i) {
    float v = normal(rng);
    if (kind == 1) v = v > 0.3F ? v : 0.0F;
    if (kind == 2) v = static_cast<float>(static_cast<int>(v * 2.0F)) * ((i & 1) ? 1.0F : -1.0F);
    if (kind == 3) v = -1.5F;
    x[i] = v;
  }
  return x;
}
}  // namespace

TEST_CASE("TopK: keeps exactly the k largest magnitudes per row (fast path and exact path)") {
  sc::TopkSelector sel, scalar;
  scalar.set_simd(false);
  for (int64_t m : {1, 2, 17, 1000, 4096, 4097, 20000, 100003}) {
    for (double frac : {0.001, 0.1, 0.3, 0.5, 1.0}) {
      for (int kind = 0; kind < 4; ++kind) {
        INFO("m=" << m << " K=" << frac << " kind=" << kind);
        std::vector<float> x = make_row(m, kind, static_cast<uint32_t>(m * 31 + kind));
        int64_t k = sc::kept_count(frac, m);
        REQUIRE(k >= 1);
        REQUIRE(k <= m);
        std::vector<int32_t> got(k);
        sel.select(x.data(), m, k, got.data());
        REQUIRE(got == sc::naive::topk_indices(x.data(), m, k));
        std::vector<int32_t> got_scalar(k);
        scalar.select(x.data(), m, k, got_scalar.data());
        REQUIRE(got_scalar == got);
        // The property itself: no dropped magnitude exceeds a kept one.
        std::vector<char> kept(m, 0);
        float min_kept = INFINITY, max_dropped = 0;
        for (int32_t i : got) kept[i] = 1;
        for (int64_t i = 0; i < m; ++i)
          (kept[i] ? min_kept : max_dropped) = kept[i] ? std::min(min_kept, std::fabs(x[i]))
                                                       : std::max(max_dropped, std::fabs(x[i]));
        REQUIRE(min_kept >= max_dropped);
      }
    }
  }
}

TEST_CASE("TopK: the sampled bracket rarely misses, also on rows with per-channel scales") {
  // Rows of 64 Ki = 512 tokens x 128 channels: iid normal, Laplace-like, and
  // channels with log-uniform scales over 3 decades (outlier channels), where
  // the 16-element sample blocks see correlated magnitudes.
  sc::TopkSelector sel;
  constexpr int64_t kTokens = 512, kChannels = 128, m = kTokens * kChannels;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> unit;
  std::vector<float> scale(kChannels);
  for (float& v : scale) v = std::pow(10.0F, 3.0F * unit(rng));
  int64_t selections = 0;
  for (int kind = 0; kind < 3; ++kind)
    for (double frac : {0.1, 0.3})
      for (int row = 0; row < 20; ++row) {
        std::vector<float> x(m);
        for (int64_t i = 0; i < m; ++i) {
          float v = normal(rng);
          if (kind == 1) v = v * v * v;
          if (kind == 2) v *= scale[i % kChannels];
          x[i] = v;
        }
        int64_t k = sc::kept_count(frac, m);
        std::vector<int32_t> got(k);
        sel.select(x.data(), m, k, got.data());
        REQUIRE(got == sc::naive::topk_indices(x.data(), m, k));
        ++selections;
      }
  INFO(sel.fallbacks() << " fallbacks in " << selections << " selections");
  REQUIRE(sel.fallbacks() <= 2);
}

TEST_CASE("TopK: k = ceil(K m) with a tolerance for K m that is an integer in decimal") {
  REQUIRE(sc::kept_count(0.1, 1000) == 100);
  REQUIRE(sc::kept_count(0.3, 10) == 3);
  REQUIRE(sc::kept_count(0.1, 1001) == 101);
  REQUIRE(sc::kept_count(0.001, 10) == 1);
  REQUIRE(sc::kept_count(1.0, 7) == 7);
}

TEST_CASE("RandK: k distinct ascending indices, each index equally likely") {
  uint64_t state = 12345;
  const int64_t m = 50, k = 10;
  std::vector<int> hits(m, 0);
  const int trials = 20000;
  for (int t = 0; t < trials; ++t) {
    std::vector<int32_t> idx(k);
    sc::select_randk(m, k, state, idx.data());
    for (int64_t j = 1; j < k; ++j) REQUIRE(idx[j] > idx[j - 1]);
    REQUIRE(idx.back() < m);
    for (int32_t i : idx) ++hits[i];
  }
  const double expected = static_cast<double>(trials) * k / m;  // 4000, sd about 57
  for (int h : hits) REQUIRE(std::fabs(h - expected) < 6 * std::sqrt(expected));
}

TEST_CASE("Index coding: smaller of bitmap and list, matching the naive coder") {
  for (int64_t m : {1, 5, 64, 65, 1000, 4096}) {
    for (double frac : {0.01, 0.05, 0.1, 0.3, 1.0}) {
      int64_t k = sc::kept_count(frac, m);
      int bits = 1;
      while ((int64_t{1} << bits) < m) ++bits;
      const int64_t rows = 3;
      std::vector<std::vector<int32_t>> ref_rows;
      std::vector<int32_t> flat;
      std::mt19937 rng(static_cast<uint32_t>(m + k));
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int32_t> all(m);
        for (int64_t i = 0; i < m; ++i) all[i] = static_cast<int32_t>(i);
        std::shuffle(all.begin(), all.end(), rng);
        all.resize(k);
        std::sort(all.begin(), all.end());
        ref_rows.push_back(all);
        flat.insert(flat.end(), all.begin(), all.end());
      }
      INFO("m=" << m << " k=" << k);
      REQUIRE(sc::index_section_bytes(rows, m, k) ==
              (rows * std::min<uint64_t>(m, k * bits) + 7) / 8);
      std::vector<uint8_t> out(sc::index_section_bytes(rows, m, k));
      sc::encode_indices(flat.data(), rows, m, k, out.data());
      REQUIRE(out == sc::naive::index_section(ref_rows, m, k));
      std::vector<int32_t> back(flat.size());
      sc::decode_indices(out.data(), rows, m, k, back.data());
      REQUIRE(back == flat);
    }
  }
}

TEST_CASE("TopK codec: message = naive indices + fp32 values; decode scatters them") {
  for (const sc::Shape& shape : std::vector<sc::Shape>{{4, 10}, {2, 3, 700}, {3, 5000}, {1, 9}}) {
    int64_t rows = shape[0], n = 1;
    for (int64_t d : shape) n *= d;
    int64_t m = n / rows;
    std::vector<float> x(n);
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
    for (double frac : {0.1, 0.3}) {
      auto codec = sc::make_codec("topk:" + std::to_string(frac));
      sc::Message msg;
      codec->encode_raw(x.data(), shape, msg);
      int64_t k = sc::kept_count(frac, m);
      std::vector<std::vector<int32_t>> ref_rows;
      std::vector<uint8_t> ref;
      for (int64_t r = 0; r < rows; ++r)
        ref_rows.push_back(sc::naive::topk_indices(x.data() + r * m, m, k));
      ref = sc::naive::index_section(ref_rows, m, k);
      for (int64_t r = 0; r < rows; ++r)
        for (int32_t i : ref_rows[r]) {
          uint8_t b[4];
          std::memcpy(b, &x[r * m + i], 4);
          ref.insert(ref.end(), b, b + 4);
        }
      REQUIRE(msg == ref);
      std::vector<float> y(n);
      codec->decode_raw(msg.data(), msg.size(), shape, y.data());
      for (int64_t r = 0; r < rows; ++r) {
        std::set<int32_t> kept(ref_rows[r].begin(), ref_rows[r].end());
        for (int64_t i = 0; i < m; ++i)
          REQUIRE(y[r * m + i] == (kept.count(i) ? x[r * m + i] : 0.0F));
      }
    }
  }
}

TEST_CASE("TopK codec: per-tensor selection and +q8 on the kept values") {
  sc::Shape shape = {4, 300};
  std::vector<float> x(1200);
  std::mt19937 rng(8);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  auto whole = sc::make_codec("topk:0.1:tensor");
  sc::Message msg;
  whole->encode_raw(x.data(), shape, msg);
  const sc::SparseSelection* sel = whole->last_selection();
  REQUIRE(sel->rows == 1);
  REQUIRE(sel->k == 120);
  REQUIRE(sel->indices == sc::naive::topk_indices(x.data(), 1200, 120));

  auto composed = sc::make_codec("topk:0.1+q8");
  composed->encode_raw(x.data(), shape, msg);
  const int64_t k = 30;
  std::vector<std::vector<int32_t>> rows;
  std::vector<float> values;
  for (int64_t r = 0; r < 4; ++r) {
    rows.push_back(sc::naive::topk_indices(x.data() + r * 300, 300, k));
    for (int32_t i : rows.back()) values.push_back(x[r * 300 + i]);
  }
  std::vector<uint8_t> ref = sc::naive::index_section(rows, 300, k);
  sc::QuantizerConfig qc;
  qc.bits = 8;
  qc.mode = sc::ScaleMode::kRow;
  std::vector<uint8_t> q = sc::naive::quantize_payload(values, {4, k}, qc);
  ref.insert(ref.end(), q.begin(), q.end());
  REQUIRE(msg == ref);
  REQUIRE(composed->spec() == "topk:0.1+q8");
}

TEST_CASE("RandK codec: keeps k entries per row; unbiased variant rescales by m/k") {
  sc::Shape shape = {2, 100};
  std::vector<float> x(200, 1.0F);
  auto plain = sc::make_codec("randk:0.2", 3);
  auto unbiased = sc::make_codec("randk:0.2:unbiased", 3);
  sc::Message msg;
  std::vector<float> y(200);
  plain->encode_raw(x.data(), shape, msg);
  plain->decode_raw(msg.data(), msg.size(), shape, y.data());
  for (int64_t r = 0; r < 2; ++r) {
    int nz = 0;
    for (int64_t i = 0; i < 100; ++i) nz += y[r * 100 + i] != 0.0F;
    REQUIRE(nz == 20);
  }
  double sum = 0;
  for (int t = 0; t < 200; ++t) {
    unbiased->encode_raw(x.data(), shape, msg);
    unbiased->decode_raw(msg.data(), msg.size(), shape, y.data());
    for (float v : y) sum += v;
  }
  REQUIRE(std::fabs(sum / (200.0 * 200.0) - 1.0) < 1e-9);  // exactly k*(m/k) per row
}

TEST_CASE("RandK codec: message = naive coding of its selection + fp32 values") {
  sc::Shape shape = {3, 2000};
  std::vector<float> x(6000);
  std::mt19937 rng(4);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  for (double frac : {0.01, 0.2, 0.5}) {
    auto codec = sc::make_codec("randk:" + std::to_string(frac), 9);
    sc::Message msg;
    codec->encode_raw(x.data(), shape, msg);
    const sc::SparseSelection* sel = codec->last_selection();
    const int64_t k = sc::kept_count(frac, 2000);
    REQUIRE(sel->k == k);
    std::vector<std::vector<int32_t>> rows;
    std::vector<uint8_t> ref;
    for (int64_t r = 0; r < 3; ++r)
      rows.emplace_back(sel->indices.begin() + r * k, sel->indices.begin() + (r + 1) * k);
    ref = sc::naive::index_section(rows, 2000, k);
    for (int64_t r = 0; r < 3; ++r)
      for (int32_t i : rows[r]) {
        uint8_t b[4];
        std::memcpy(b, &x[r * 2000 + i], 4);
        ref.insert(ref.end(), b, b + 4);
      }
    REQUIRE(msg == ref);
  }
}
