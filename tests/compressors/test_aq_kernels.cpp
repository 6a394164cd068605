// AQ-SGD's row kernels (compressors/codecs/aq_kernels.h): each SIMD path this CPU
// runs (AVX-512, AVX2 + F16C) against the portable loops, bit for bit: fp16
// buffers, deltas, outputs, the "fits" flag and the double norm. Over every
// fp16 value as a buffer entry, a sweep of fp32 bit patterns around every fp16
// rounding boundary (ties to even and odd included), ragged row lengths
// (vector tails) and NaN, infinities, subnormals and values at the fp16
// overflow edge. A hidden test (about 30 s: test_compressors "[.exhaustive]")
// runs all 2^32 fp32 patterns through the fp16 store.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compressors/codecs/aq_kernels.h"
#include "compressors/codecs/quantizer.h"

namespace sc = slowpipe::compressors;
using Isa = sc::aq::Isa;

namespace {

// The SIMD paths this CPU runs (none: the tests pass vacuously, with a warning).
std::vector<Isa> simd_paths() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2})
    if (sc::aq::isa_available(isa)) out.push_back(isa);
  if (out.empty()) WARN("this CPU runs no SIMD path of aq_kernels: only the portable loops");
  return out;
}

float from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}
bool same_bits(double a, double b) {
  uint64_t x = 0, y = 0;
  std::memcpy(&x, &a, 8);
  std::memcpy(&y, &b, 8);
  return x == y;
}

// Activations with the values that stress fp16 stores: NaN (quiet, signalling,
// negative), infinities, -0, fp32 and fp16 subnormals, the overflow edge
// (65504 fits, 65520 rounds to inf) and values beyond fp16.
std::vector<float> activations(int64_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng) * (rng() % 7 == 0 ? 300.0F : 1.0F);
  if (specials) {
    const float kSpecials[] = {std::numeric_limits<float>::quiet_NaN(),
                               from_bits(0x7F800001),  // signalling NaN
                               from_bits(0xFFC12345),  // negative NaN with a payload
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               -0.0F,
                               std::numeric_limits<float>::denorm_min(),
                               3e-8F,  // fp16 subnormal range
                               65504.0F,
                               65519.996F,
                               65520.0F,
                               -65520.0F,
                               1e30F};
    const int64_t k = sizeof(kSpecials) / sizeof(kSpecials[0]);
    for (int64_t i = 0; i < n; i += 29) x[i] = kSpecials[(i / 29) % k];
  }
  return x;
}

// fp16 rows: random finite halves, plus (specials) NaN and infinity entries.
std::vector<uint16_t> halves(int64_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> m(n);
  for (uint16_t& h : m) {
    h = static_cast<uint16_t>(rng());
    if ((h & 0x7C00) == 0x7C00) h ^= 0x4000;  // finite
  }
  if (specials) {
    const uint16_t kSpecials[] = {0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x8000, 0x0001, 0x7BFF};
    for (int64_t i = 3; i < n; i += 31) m[i] = kSpecials[(i / 31) % 8];
  }
  return m;
}

// Runs the three kernels on `isa` over (a, m) and records every output.
struct Outputs {
  std::vector<uint16_t> stored, accumulated;
  std::vector<float> delta, out;
  bool store_fits = false, acc_fits = false;
  double store_norm = 0.5, delta_norm = 0.25;
};
Outputs run(const std::vector<float>& a, const std::vector<uint16_t>& m, bool seen, Isa isa) {
  const auto n = static_cast<int64_t>(a.size());
  Outputs o;
  o.stored.assign(n, 0x1234);
  o.store_fits = sc::aq::store_row(a.data(), n, o.stored.data(), &o.store_norm, isa);
  o.delta.assign(n, 7.0F);
  sc::aq::delta_row(a.data(), m.data(), seen, n, o.delta.data(), &o.delta_norm, isa);
  o.accumulated = m;
  o.out = a;  // in place, as the receiver runs it
  o.acc_fits =
      sc::aq::accumulate_row(o.accumulated.data(), seen, o.out.data(), n, o.out.data(), isa);
  return o;
}
void require_same(const Outputs& fast, const Outputs& slow) {
  REQUIRE(fast.stored == slow.stored);
  REQUIRE(fast.store_fits == slow.store_fits);
  REQUIRE(same_bits(fast.store_norm, slow.store_norm));
  REQUIRE(same_bits(fast.delta, slow.delta));
  REQUIRE(same_bits(fast.delta_norm, slow.delta_norm));
  REQUIRE(fast.accumulated == slow.accumulated);
  REQUIRE(same_bits(fast.out, slow.out));
  REQUIRE(fast.acc_fits == slow.acc_fits);
}

// fp32 patterns around every fp16 rounding boundary: each of the 2^16 upper
// halves with low halves at and around the fp32 -> fp16 (normal) halfway point
// (bit 12), with bit 13 (the kept mantissa's last bit) 0 and 1, and a random one.
std::vector<float> rounding_sweep() {
  const uint32_t kLow[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF,
                           0x2000, 0x2FFF, 0x3000, 0x3001, 0x8000, 0xFFFF};
  std::mt19937 rng(5);
  std::vector<float> x;
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    for (uint32_t lo : kLow) x.push_back(from_bits(hi << 16 | lo));
    x.push_back(from_bits(hi << 16 | (rng() & 0xFFFF)));
  }
  return x;
}

}  // namespace

TEST_CASE("AQ kernels: the SIMD paths equal the portable loops bit for bit") {
  for (Isa isa : simd_paths())
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 33, 100, 8192})
      for (bool specials : {false, true})
        for (bool seen : {true, false}) {
          INFO("isa " << static_cast<int>(isa) << " n " << n << " specials " << specials << " seen "
                      << seen);
          const auto seed = static_cast<uint32_t>(n * 4 + specials * 2 + seen);
          const std::vector<float> a = activations(n, seed, specials);
          const std::vector<uint16_t> m = halves(n, seed + 1000, specials);
          require_same(run(a, m, seen, isa), run(a, m, seen, Isa::kPortable));
        }
}

TEST_CASE("AQ kernels: every fp16 buffer value, read and rewritten, agrees") {
  std::vector<uint16_t> m(0x10000);
  for (uint32_t h = 0; h < 0x10000; ++h) m[h] = static_cast<uint16_t>(h);
  for (Isa isa : simd_paths())
    // y = +0 and -0 expose float(m) itself (and its sign); random y its sums.
    for (float y : {0.0F, -0.0F, 1.0F}) {
      INFO("isa " << static_cast<int>(isa) << " y " << y);
      std::vector<float> a(m.size(), y);
      if (y == 1.0F) a = activations(static_cast<int64_t>(m.size()), 9, false);
      require_same(run(a, m, true, isa), run(a, m, true, Isa::kPortable));
    }
}

TEST_CASE("AQ kernels: fp32 -> fp16 stores agree around every rounding boundary") {
  const std::vector<float> x = rounding_sweep();
  // Rows of 37 (whole vectors and a tail) so that one NaN or overflow does
  // not hide another row's "fits" flag.
  const int64_t row = 37;
  std::vector<uint16_t> slow(x.size());
  int64_t unfit = 0;
  for (int64_t i = 0; i + row <= static_cast<int64_t>(x.size()); i += row)
    unfit += !sc::aq::store_row(x.data() + i, row, slow.data() + i, nullptr, Isa::kPortable);
  for (Isa isa : simd_paths()) {
    INFO("isa " << static_cast<int>(isa));
    std::vector<uint16_t> fast(x.size());
    for (int64_t i = 0; i + row <= static_cast<int64_t>(x.size()); i += row) {
      double nf = 0, ns = 0;
      const bool ff = sc::aq::store_row(x.data() + i, row, fast.data() + i, &nf, isa);
      std::vector<uint16_t> scratch(row);
      const bool fs = sc::aq::store_row(x.data() + i, row, scratch.data(), &ns, Isa::kPortable);
      REQUIRE(ff == fs);
      REQUIRE(same_bits(nf, ns));
    }
    REQUIRE(fast == slow);
  }
  // The sweep holds exact ties of both parities and values that overflow: a
  // conversion that rounded ties away from zero, or truncated, would fail the
  // comparisons above.
  int64_t ties = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &x[i], 4);
    const float back = sc::half_to_float(slow[i]);
    if ((b & 0x1FFF) == 0x1000 && std::fabs(x[i]) > 6.2e-5F && std::fabs(x[i]) < 65504.0F &&
        back != x[i])
      ++ties;
  }
  REQUIRE(ties > 10000);
  REQUIRE(unfit > 0);
}

TEST_CASE("AQ kernels: all 2^32 fp32 patterns store alike", "[.exhaustive]") {
  const int64_t row = 1 << 16;
  std::vector<float> x(row);
  std::vector<uint16_t> fast(row), slow(row);
  const std::vector<Isa> paths = simd_paths();
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += row) {
    for (int64_t j = 0; j < row; ++j) x[j] = from_bits(static_cast<uint32_t>(base + j));
    const bool fs = sc::aq::store_row(x.data(), row, slow.data(), nullptr, Isa::kPortable);
    for (Isa isa : paths) {
      const bool ff = sc::aq::store_row(x.data(), row, fast.data(), nullptr, isa);
      if (ff != fs || fast != slow)
        FAIL("isa " << static_cast<int>(isa) << " differs in [" << base << ", " << base + row
                    << ")");
    }
  }
}
