// TopK / RandK: selection against the naive reference, message bytes against
// the naive index coding, composition with a value quantizer.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "compressors/codecs/codec.h"
#include "compressors/codecs/index_coding.h"
#include "compressors/codecs/sparsifier.h"
#include "compressors/codecs/topk_select.h"
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

TEST_CASE("TopK: the AVX2 and AVX-512 sweeps keep the portable sweeps' indices, bit for bit") {
  // Rows over 4096 elements take the sweeps; lengths off the 8- and 16-lane
  // grid leave tails; special magnitudes (NaN, inf, -0, subnormals, many ties
  // at the threshold) take the in-order tie path inside vectors.
  using Sweeps = sc::TopkSelector::Sweeps;
  sc::TopkSelector portable;
  portable.set_sweeps(Sweeps::kPortable);
  REQUIRE(portable.sweeps() == Sweeps::kPortable);
  // Under SLOWPIPE_SIMD=avx2 (ctest's test_compressors_avx2) the cap holds.
  if (const char* cap = std::getenv("SLOWPIPE_SIMD"); cap && std::string(cap) == "avx2")
    REQUIRE(sc::TopkSelector().sweeps() != Sweeps::kAvx512);
  int simd_runs = 0;
  for (Sweeps isa : {Sweeps::kAvx2, Sweeps::kAvx512}) {
    sc::TopkSelector fast;
    fast.set_sweeps(isa);
    if (fast.sweeps() != isa) continue;  // this CPU or SLOWPIPE_SIMD does not allow it
    ++simd_runs;
    std::mt19937 rng(11);
    for (int64_t m : {4097, 8191, 20011, 65536}) {
      for (int kind = 0; kind < 6; ++kind) {
        std::vector<float> x = make_row(m, kind % 4, static_cast<uint32_t>(m + kind));
        if (kind == 4)  // special values sprinkled in
          for (int64_t i = 0; i < m; i += 1 + static_cast<int64_t>(rng() % 97)) {
            const uint32_t pick = rng() % 5;
            uint32_t bits = pick == 0   ? 0x7FC00000U            // NaN
                            : pick == 1 ? 0x7F800000U            // inf
                            : pick == 2 ? 0x80000000U            // -0
                            : pick == 3 ? (rng() & 0x007FFFFFU)  // subnormal
                                        : 0xFF800000U;           // -inf
            std::memcpy(&x[i], &bits, 4);
          }
        if (kind == 5)  // a tenth of the row at one magnitude: ties across the threshold
          for (int64_t i = 0; i < m; ++i)
            if (rng() % 10 == 0) x[i] = (i & 1) ? 2.0F : -2.0F;
        for (double frac : {0.0005, 0.05, 0.1, 0.3, 0.9}) {
          INFO("isa=" << static_cast<int>(isa) << " m=" << m << " kind=" << kind << " K=" << frac);
          const int64_t k = sc::kept_count(frac, m);
          std::vector<int32_t> want(k), got(k), got_again(k);
          portable.select(x.data(), m, k, want.data());
          fast.select(x.data(), m, k, got.data());
          REQUIRE(got == want);
          // The values written beside the indices (the AVX2 and AVX-512
          // sweeps from their kept stream, the scalar paths by a gather):
          // x[idx] bit for bit, NaN payloads and signs included; the indices
          // are the same with them.
          std::vector<float> values(k), values_portable(k);
          fast.select(x.data(), m, k, got_again.data(), values.data());
          portable.select(x.data(), m, k, want.data(), values_portable.data());
          REQUIRE(got_again == got);
          for (int64_t j = 0; j < k; ++j) {
            REQUIRE(std::memcmp(&values[j], &x[got[j]], 4) == 0);
            REQUIRE(std::memcmp(&values_portable[j], &x[want[j]], 4) == 0);
          }
          std::vector<int32_t> exact(k);
          portable.select_exact(x.data(), m, k, exact.data());
          REQUIRE(want == exact);
          // The sure ones and candidates the sweeps count decide the exact
          // fallback: the same counts, the same fallbacks.
          REQUIRE(fast.fallbacks() == portable.fallbacks());
          // (the naive reference's fabs ordering is not defined for NaN)
          if (kind != 4) REQUIRE(want == sc::naive::topk_indices(x.data(), m, k));
        }
      }
    }
  }
  if (simd_runs == 0) WARN("no SIMD sweeps on this CPU: only the portable sweeps were checked");
}

TEST_CASE("TopK: the sampled bracket rarely misses, also on rows with per-channel scales") {
  // Rows of 64 Ki = 512 tokens x 128 channels: iid normal, Laplace-like, and
  // channels with log-uniform scales over 3 decades (outlier channels), where
  // the 16-element sample blocks see correlated magnitudes.
  sc::TopkSelector sel;
  constexpr int64_t kTokens = 512, kChannels = 128, kElements = kTokens * kChannels;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> unit;
  std::vector<float> scale(kChannels);
  for (float& v : scale) v = std::pow(10.0F, 3.0F * unit(rng));
  int64_t selections = 0;
  for (int kind = 0; kind < 3; ++kind)
    for (double frac : {0.1, 0.3})
      for (int row = 0; row < 20; ++row) {
        std::vector<float> x(kElements);
        for (int64_t i = 0; i < kElements; ++i) {
          float v = normal(rng);
          if (kind == 1) v = v * v * v;
          if (kind == 2) v *= scale[i % kChannels];
          x[i] = v;
        }
        int64_t k = sc::kept_count(frac, kElements);
        std::vector<int32_t> got(k);
        sel.select(x.data(), kElements, k, got.data());
        REQUIRE(got == sc::naive::topk_indices(x.data(), kElements, k));
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

namespace {
// k distinct ascending indices in [0, m), uniformly drawn.
std::vector<int32_t> random_mask(int64_t m, int64_t k, std::mt19937& rng) {
  std::vector<int32_t> all(m);
  for (int64_t i = 0; i < m; ++i) all[i] = static_cast<int32_t>(i);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(k);
  std::sort(all.begin(), all.end());
  return all;
}
std::vector<int32_t> flatten(const std::vector<std::vector<int32_t>>& rows) {
  std::vector<int32_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return flat;
}
constexpr sc::IndexFormat kFormats[] = {sc::IndexFormat::kBitmap, sc::IndexFormat::kList,
                                        sc::IndexFormat::kEliasFano};
}  // namespace

TEST_CASE("Index coding: the smallest of bitmap, list and Elias-Fano, matching the naive coder") {
  for (int64_t m : {1, 2, 3, 5, 7, 64, 65, 100, 1000, 4096, 65537}) {
    for (double frac : {0.001, 0.01, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 1.0}) {
      const int64_t k = sc::kept_count(frac, m), rows = 3;
      std::mt19937 rng(static_cast<uint32_t>(m + k));
      std::vector<std::vector<int32_t>> ref_rows;
      for (int64_t r = 0; r < rows; ++r) ref_rows.push_back(random_mask(m, k, rng));
      const std::vector<int32_t> flat = flatten(ref_rows);
      const sc::naive::IndexFormatSize naive = sc::naive::index_format(m, k);
      INFO("m=" << m << " k=" << k << " naive format " << naive.format);
      REQUIRE(static_cast<int>(sc::index_coding(m, k).format) == naive.format);
      REQUIRE(sc::index_coding(m, k).row_bits == naive.row_bits);
      REQUIRE(sc::index_section_bytes(rows, m, k) == (rows * naive.row_bits + 7) / 8);
      std::vector<uint8_t> out(sc::index_section_bytes(rows, m, k));
      sc::encode_indices(flat.data(), rows, m, k, out.data());
      REQUIRE(out == sc::naive::index_section(ref_rows, m, k));
      std::vector<int32_t> back(flat.size());
      sc::decode_indices(out.data(), rows, m, k, back.data());
      REQUIRE(back == flat);
      std::vector<std::vector<int32_t>> naive_back;
      REQUIRE(sc::naive::decode_index_section(out, rows, m, k, naive_back));
      REQUIRE(naive_back == ref_rows);
    }
  }
}

TEST_CASE("Index coding: exact sizes at chosen (m, k); ties go to bitmap, then list") {
  struct Case {
    int64_t m, k;
    sc::IndexFormat format;
    int low_bits;
    uint64_t row_bits;
  };
  const Case cases[] = {
      // GPT-2 XL [1, 1024, 1600] at K = 10%: 3 k + k + m / 8 bits (bitmap: m)
      {1638400, 163840, sc::IndexFormat::kEliasFano, 3, 860160},
      {65536, 6554, sc::IndexFormat::kEliasFano, 3, 34408},  // 64 Ki rows, K = 10%
      {1000, 100, sc::IndexFormat::kEliasFano, 3, 525},
      {1000, 7, sc::IndexFormat::kEliasFano, 7, 63},  // 1000 / 128 not an integer
      {100, 20, sc::IndexFormat::kEliasFano, 2, 85},
      {1024, 256, sc::IndexFormat::kBitmap, 2, 1024},  // bitmap = Elias-Fano: bitmap
      {4, 2, sc::IndexFormat::kBitmap, 1, 4},          // bitmap = list: bitmap
      {132, 2, sc::IndexFormat::kList, 6, 16},         // list = Elias-Fano: list
      {1024, 2, sc::IndexFormat::kList, 9, 20},        // list 20 < Elias-Fano 22
      {1, 1, sc::IndexFormat::kBitmap, 0, 1},
      {1000, 0, sc::IndexFormat::kBitmap, 0, 0},
  };
  for (const Case& c : cases) {
    INFO("m=" << c.m << " k=" << c.k);
    const sc::IndexCoding got = sc::index_coding(c.m, c.k);
    CHECK(got.format == c.format);
    CHECK(got.low_bits == c.low_bits);
    CHECK(got.row_bits == c.row_bits);
  }
  REQUIRE(sc::index_section_bytes(1, 1638400, 163840) == 107520);
  REQUIRE(sc::index_section_bytes(8, 1638400, 163840) == 860160);
  REQUIRE(sc::index_section_bytes(3, 1000, 7) == 24);  // 3 * 63 bits, one pad at the end
  REQUIRE(sc::index_section_bytes(5, 1000, 0) == 0);
  REQUIRE_THROWS(sc::index_coding(10, 11));
}

TEST_CASE("Index coding: the encoder refuses rows it cannot code (out-of-bounds writes)") {
  const std::vector<std::vector<int32_t>> bad = {{1, 5, 9, 4, 3, 2},    // the second row descending
                                                 {1, 5, 9, 2, 2, 4},    // a repeated index
                                                 {1, 5, 100, 2, 3, 4},  // index m
                                                 {-1, 5, 9, 2, 3, 4}};  // negative
  for (sc::IndexFormat format : kFormats) {
    const sc::IndexCoding coding = sc::index_coding_as(format, 100, 3);
    std::vector<uint8_t> out(sc::index_section_bytes(2, coding));
    for (const std::vector<int32_t>& idx : bad) {
      INFO("format " << static_cast<int>(format) << " indices " << idx[0] << " " << idx[2] << " "
                     << idx[3] << " " << idx[4]);
      REQUIRE_THROWS_AS(sc::encode_indices(idx.data(), 2, 100, 3, coding, out.data()),
                        std::invalid_argument);
    }
  }
}

TEST_CASE("Index coding: every format round-trips at its edges, bit for bit with the naive coder") {
  // (m, k): k = 0, 1, m; m = 1; l = 0 (k > m / 2); m a multiple of 2^l or not.
  const std::pair<int64_t, int64_t> sizes[] = {
      {1, 0},    {1, 1},     {2, 1},     {2, 2},     {3, 1},        {5, 5},        {7, 3},
      {8, 1},    {11, 5},    {64, 1},    {64, 64},   {100, 51},     {100, 100},    {1000, 7},
      {1000, 1}, {4096, 64}, {4097, 64}, {65537, 3}, {70000, 7000}, {65536, 65535}};
  std::mt19937 rng(42);
  for (const auto& [m, k] : sizes)
    for (sc::IndexFormat format : kFormats) {
      const int f = static_cast<int>(format);
      const sc::IndexCoding coding = sc::index_coding_as(format, m, k);
      // Masks: the first k, the last k, 0 and m - 1 with random ones between,
      // evenly spaced, random.
      std::vector<std::vector<int32_t>> masks;
      std::vector<int32_t> first(k), last(k), spaced(k);
      for (int64_t j = 0; j < k; ++j) {
        first[j] = static_cast<int32_t>(j);
        last[j] = static_cast<int32_t>(m - k + j);
        spaced[j] = static_cast<int32_t>(j * m / k);
      }
      masks.push_back(first);
      masks.push_back(last);
      masks.push_back(spaced);
      if (k >= 2) {
        std::vector<int32_t> ends = random_mask(m - 2, k - 2, rng);
        for (int32_t& i : ends) ++i;
        ends.insert(ends.begin(), 0);
        ends.push_back(static_cast<int32_t>(m - 1));
        masks.push_back(ends);
      }
      for (int t = 0; t < 4; ++t) masks.push_back(random_mask(m, k, rng));
      for (int64_t rows : {1, 2, 3})
        for (size_t start = 0; start < masks.size(); ++start) {
          std::vector<std::vector<int32_t>> ref_rows;
          for (int64_t r = 0; r < rows; ++r) ref_rows.push_back(masks[(start + r) % masks.size()]);
          const std::vector<int32_t> flat = flatten(ref_rows);
          INFO("format " << f << " m=" << m << " k=" << k << " l=" << coding.low_bits
                         << " rows=" << rows << " mask " << start);
          REQUIRE(coding.row_bits == sc::naive::index_format(m, k, f).row_bits);
          std::vector<uint8_t> out(sc::index_section_bytes(rows, coding), 0xA5);
          sc::encode_indices(flat.data(), rows, m, k, coding, out.data());
          REQUIRE(out == sc::naive::index_section(ref_rows, m, k, f));
          std::vector<uint8_t> one_by_one(out.size(), 0x5A);  // no AVX2 set bits
          sc::encode_indices(flat.data(), rows, m, k, coding, one_by_one.data(), false);
          REQUIRE(one_by_one == out);
          for (bool vector : {true, false}) {  // the AVX2 high parts where allowed, and not
            std::vector<int32_t> back(flat.size(), -1);
            sc::decode_indices(out.data(), rows, m, k, coding, back.data(), vector);
            REQUIRE(back == flat);
          }
          std::vector<std::vector<int32_t>> naive_back;
          REQUIRE(sc::naive::decode_index_section(out, rows, m, k, naive_back, f));
          REQUIRE(naive_back == ref_rows);
        }
    }
}

TEST_CASE("Index coding: the decoders accept exactly what the naive decoder accepts") {
  // Flipped bits and random bytes: DataError exactly where the naive decoder
  // refuses (count, range, order), the same indices where it accepts.
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1},    {2, 1},      {7, 3},     {11, 5},
                                               {64, 8},   {100, 10},   {100, 51},  {132, 14},
                                               {1000, 7}, {1000, 100}, {5000, 500}};
  std::mt19937 rng(7);
  int64_t accepted = 0, refused = 0;
  for (const auto& [m, k] : sizes)
    for (sc::IndexFormat format : kFormats) {
      const int f = static_cast<int>(format);
      const sc::IndexCoding coding = sc::index_coding_as(format, m, k);
      const int64_t rows = 2;
      for (int trial = 0; trial < 400; ++trial) {
        std::vector<std::vector<int32_t>> ref_rows = {random_mask(m, k, rng),
                                                      random_mask(m, k, rng)};
        std::vector<uint8_t> bytes = sc::naive::index_section(ref_rows, m, k, f);
        if (trial % 4 == 3) {
          for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
        } else {
          const int flips = 1 + static_cast<int>(rng() % 3);
          for (int i = 0; i < flips; ++i) {
            const uint64_t bit = rng() % (rows * coding.row_bits);
            bytes[bit / 8] ^= static_cast<uint8_t>(1U << (bit % 8));
          }
        }
        INFO("format " << f << " m=" << m << " k=" << k << " trial " << trial);
        std::vector<std::vector<int32_t>> naive_rows;
        const bool naive_ok = sc::naive::decode_index_section(bytes, rows, m, k, naive_rows, f);
        bool ok = true;
        for (bool vector : {true, false}) {  // the AVX2 high parts where allowed, and not
          std::vector<int32_t> back(rows * k);
          ok = true;
          try {
            sc::decode_indices(bytes.data(), rows, m, k, coding, back.data(), vector);
          } catch (const slowpipe::DataError&) {
            ok = false;
          }
          REQUIRE(ok == naive_ok);
          if (ok) REQUIRE(back == flatten(naive_rows));
        }
        (ok ? accepted : refused) += 1;
      }
    }
  INFO(accepted << " accepted, " << refused << " refused");
  REQUIRE(accepted > 1000);
  REQUIRE(refused > 1000);
}

TEST_CASE(
    "Index coding: Elias-Fano rows with a missing, an extra, a misordered or a too large index") {
  const int64_t m = 1000, k = 100;  // Elias-Fano, l = 3: 300 low bits, then 225 high bits
  REQUIRE(sc::index_coding(m, k).format == sc::IndexFormat::kEliasFano);
  std::vector<int32_t> idx(k);
  for (int64_t j = 0; j < k; ++j) idx[j] = static_cast<int32_t>(j * 10);
  idx[1] = 8;        // h = 1, low 0
  idx[2] = 9;        // h = 1, low 1
  idx[k - 1] = 999;  // h = 124, the last bit of the high part at 124 + 99 = 223
  std::vector<uint8_t> good(sc::index_section_bytes(1, m, k));
  sc::encode_indices(idx.data(), 1, m, k, good.data());
  std::vector<int32_t> back(k);
  sc::decode_indices(good.data(), 1, m, k, back.data());
  REQUIRE(back == idx);
  auto flip = [](std::vector<uint8_t> b, uint64_t p) {
    b[p / 8] ^= static_cast<uint8_t>(1U << (p % 8));
    return b;
  };
  const uint64_t high = 3 * k;
  auto fails = [&](const std::vector<uint8_t>& b) {
    REQUIRE_THROWS_AS(sc::decode_indices(b.data(), 1, m, k, back.data()), slowpipe::DataError);
  };
  fails(flip(good, high + 0));                      // index 0's high bit cleared: 99 indices
  fails(flip(good, high + 224));                    // one set bit more after the last: 101
  fails(flip(flip(good, high + 223), high + 224));  // 999 -> 1007 (h = 125): >= m
  fails(flip(flip(good, 3), 6));  // the low parts of 8 and 9 (bits 3, 6) swapped: 9, 8
}

TEST_CASE("Index coding: Elias-Fano order checked across the decoder's chunks of 1024") {
  // Two indices in one bucket (the same high part) at j = b - 1 and b, their
  // low parts swapped in the message: out of order at every b around the
  // decoder's first two chunk joins (a chunk ends on the first word of the
  // unary code that takes it to 1024 indices or more), and elsewhere.
  const int64_t m = 40960, k = 4096;  // Elias-Fano, l = 3
  const sc::IndexCoding coding = sc::index_coding(m, k);
  REQUIRE(coding.format == sc::IndexFormat::kEliasFano);
  REQUIRE(coding.low_bits == 3);
  std::vector<int64_t> positions = {1, 3000, 4095};
  for (int64_t b = 1015; b < 1110; ++b) positions.push_back(b);
  for (int64_t b = 2040; b < 2200; ++b) positions.push_back(b);
  int64_t split = 0;  // pairs whose two unary bits lie in two words
  for (int64_t b : positions)
    // Every bucket h that keeps the row ascending around j = b - 1, b.
    for (auto h = static_cast<int32_t>((10 * b - 21) / 8 + 1); 8 * h + 2 < 10 * (b + 1); ++h) {
      std::vector<int32_t> idx(k);
      for (int64_t j = 0; j < k; ++j) idx[j] = static_cast<int32_t>(10 * j);
      idx[b - 1] = 8 * h + 1;
      idx[b] = 8 * h + 2;
      split += (h + b) % 64 == 0;  // b's unary bit opens a word
      std::vector<uint8_t> bytes(sc::index_section_bytes(1, m, k));
      sc::encode_indices(idx.data(), 1, m, k, bytes.data());
      const auto flip = [&] {  // low parts 1 <-> 2
        for (int64_t bit : {3 * (b - 1), 3 * (b - 1) + 1, 3 * b, 3 * b + 1})
          bytes[bit / 8] ^= static_cast<uint8_t>(1U << (bit % 8));
      };
      flip();
      INFO("b=" << b << " h=" << h);
      std::vector<std::vector<int32_t>> naive_rows;
      REQUIRE_FALSE(sc::naive::decode_index_section(bytes, 1, m, k, naive_rows));
      std::vector<int32_t> back(k);
      for (bool vector : {true, false})
        REQUIRE_THROWS_AS(sc::decode_indices(bytes.data(), 1, m, k, coding, back.data(), vector),
                          slowpipe::DataError);
      flip();  // back in order
      for (bool vector : {true, false}) {
        sc::decode_indices(bytes.data(), 1, m, k, coding, back.data(), vector);
        REQUIRE(back == idx);
      }
    }
  REQUIRE(split >= 4);
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

TEST_CASE("TopK codec: decode writes every output element, whatever the buffer held") {
  // The zeros come from a fill in 16-byte vector stores with a scalar tail,
  // block by block (1024 floats): rows off the 16-float grid, rows longer
  // than a block, and fractions that leave long runs of zeros; the output
  // buffer starts full of NaN, so a missed zero shows.
  for (const sc::Shape& shape : std::vector<sc::Shape>{{3, 37}, {2, 4111}, {1, 9000}, {5, 16}}) {
    const int64_t rows = shape[0], m = shape[1], n = rows * m;
    std::vector<float> x(n);
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
    for (const char* spec : {"topk:0.01", "topk:0.1", "topk:0.3", "randk:0.1"}) {
      auto codec = sc::make_codec(spec, 5);
      sc::Message msg;
      codec->encode_raw(x.data(), shape, msg);
      std::vector<float> y(n, std::numeric_limits<float>::quiet_NaN());
      codec->decode_raw(msg.data(), msg.size(), shape, y.data());
      const sc::SparseSelection* sel = codec->last_selection();
      std::vector<float> want(n, 0.0F);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < sel->k; ++j) {
          const int64_t i = r * m + sel->indices[r * sel->k + j];
          want[i] = x[i];
        }
      INFO(spec << " rows=" << rows << " m=" << m);
      REQUIRE(std::memcmp(y.data(), want.data(), 4 * n) == 0);
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
