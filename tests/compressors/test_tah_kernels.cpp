// TAH-Quant's AVX2 quantize-and-pack kernel and its grid (internal/tah_kernels.h)
// against a naive loop written here: the codes of docs/codec-spec.md
// ("TAH-Quant"), packed bit by bit LSB-first.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compressors/codecs/codec.h"
#include "compressors/codecs/internal/quant_simd.h"
#include "compressors/codecs/internal/tah_kernels.h"
#include "compressors/codecs/internal/tah_quant.h"

namespace sc = slowpipe::compressors;
namespace tah = slowpipe::compressors::tah;

namespace {

// code = clamp(floor((v - zero) * inv + 1/2), 0, 2^bits - 1), each
// code's bits at bit position i * bits of the stream, LSB first.
std::vector<uint8_t> naive_pack(const std::vector<float>& v, float zero, float inv, int bits) {
  std::vector<uint8_t> out((v.size() * static_cast<size_t>(bits) + 7) / 8, 0);
  const auto top = static_cast<float>((1 << bits) - 1);
  for (size_t i = 0; i < v.size(); ++i) {
    float t = (v[i] - zero) * inv + 0.5F;
    t = t > 0.0F ? t : 0.0F;
    t = t < top ? t : top;
    const auto code = static_cast<uint32_t>(static_cast<int>(t));
    for (int b = 0; b < bits; ++b) {
      const size_t pos = i * static_cast<size_t>(bits) + static_cast<size_t>(b);
      out[pos / 8] |= static_cast<uint8_t>(((code >> b) & 1U) << (pos % 8));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("TAH-Quant: the AVX2 quantize-and-pack kernel gives the naive loop's bytes") {
  std::mt19937 rng(23);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 9);
  int64_t ran = 0;
  for (int bits = 1; bits <= 8; ++bits)
    for (int64_t len : {32, 64, 96, 256, 1024})
      for (int trial = 0; trial < 40; ++trial) {
        std::vector<float> v(static_cast<size_t>(len));
        for (float& e : v) {  // zeros of both signs, huge values, the rest normal
          const int kind = pick(rng);
          e = kind == 0 ? -0.0F : kind == 1 ? 3e38F : kind == 2 ? -3e38F : normal(rng);
        }
        float lo = v[0], hi = v[0];
        for (float e : v) lo = std::min(lo, e), hi = std::max(hi, e);
        if (trial % 4 == 0) lo = -1.0F, hi = 1.0F;  // codes clamped at both ends
        tah::Grid grid;
        tah::grids_of(&lo, &hi, &bits, 1, &grid);
        // inv = 0: the codes of a step of 0.
        const float inv = trial % 5 == 0 ? 0.0F : grid.inv;
        INFO("bits " << bits << " len " << len << " trial " << trial << " inv " << inv);
        const std::vector<uint8_t> want = naive_pack(v, grid.zero, inv, bits);
        // Room after the tile holds a sentinel the kernel must leave alone.
        std::vector<uint8_t> got(want.size() + 16, 0xA5);
        const tah::QuantizePack pack = tah::quantize_pack_avx2_for(bits);
        if (pack == nullptr) continue;
        pack(v.data(), len, grid.zero, inv, got.data());
        for (size_t i = want.size(); i < got.size(); ++i) REQUIRE(got[i] == 0xA5);
        ++ran;
        got.resize(want.size());
        REQUIRE(got == want);
      }
  // W = 7 and 8 always take the caller's loops.
  REQUIRE(tah::quantize_pack_avx2_for(7) == nullptr);
  REQUIRE(tah::quantize_pack_avx2_for(8) == nullptr);
  if (sc::simd::level() >= sc::simd::Level::kAvx2)
    REQUIRE(ran == 6 * 5 * 40);
  else
    WARN("no AVX2 here (or SLOWPIPE_SIMD caps it): the kernel was not run");
}

TEST_CASE("TAH-Quant: a tile's grid is its fp16 roundings of min and step") {
  std::mt19937 rng(29);
  std::normal_distribution<float> normal;
  constexpr int kBatch = 5;  // batches of several tiles, as the encoder passes them
  for (int trial = 0; trial < 4000; ++trial) {
    float lo[kBatch], hi[kBatch];
    int bits[kBatch];
    for (int i = 0; i < kBatch; ++i) {
      const float scale = std::ldexp(1.0F, (trial + i) % 40 - 20);
      lo[i] = normal(rng) * scale, hi[i] = normal(rng) * scale;
      if (lo[i] > hi[i]) std::swap(lo[i], hi[i]);
      if ((trial + i) % 7 == 0) hi[i] = lo[i];  // a constant tile: step 0
      if ((trial + i) % 11 == 0) lo[i] = -0.0F;
      bits[i] = 1 + (trial + i) % 8;
    }
    tah::Grid grids[kBatch];
    tah::grids_of(lo, hi, bits, kBatch, grids);
    for (int i = 0; i < kBatch; ++i) {
      const tah::Grid& g = grids[i];
      INFO("lo " << lo[i] << " hi " << hi[i] << " bits " << bits[i]);
      REQUIRE(g.zero_half == tah::half_down(lo[i]));
      REQUIRE(g.zero == tah::widen(g.zero_half));
      if (std::fabs(lo[i]) <= 65504.0F) {  // the largest fp16 <= lo: the next one up lies above
        REQUIRE(g.zero <= lo[i]);
        const auto up = static_cast<uint16_t>(g.zero_half == 0x8000    ? 0x0001
                                              : (g.zero_half & 0x8000) ? g.zero_half - 1
                                                                       : g.zero_half + 1);
        REQUIRE(tah::widen(up) > lo[i]);
      }
      const auto top = static_cast<float>((1 << bits[i]) - 1);
      REQUIRE(g.step_half == tah::half_up(std::max(0.0F, (hi[i] - g.zero) / top)));
      REQUIRE(g.step == tah::widen(g.step_half));
      REQUIRE(g.step >= 0.0F);
      REQUIRE(g.inv == (g.step > 0.0F ? 1.0F / g.step : 0.0F));
    }
  }
}

TEST_CASE("TAH-Quant: the entropy's vector path gives the portable loop's float") {
  std::mt19937 rng(31);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 9);
  int64_t compared = 0;
  for (int64_t len : {8, 16, 40, 64, 256, 1024})
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<float> x(static_cast<size_t>(len));
      // Zeros of both signs, subnormals, a tile scale from 2^-140 to 2^127.
      const float scale = std::ldexp(1.0F, trial % 268 - 140);
      for (float& e : x) {
        const int kind = pick(rng);
        e = kind == 0 ? -0.0F : kind == 1 ? 1e-42F : normal(rng) * scale;
      }
      if (trial % 50 == 0) std::fill(x.begin(), x.end(), 0.0F);
      INFO("len " << len << " trial " << trial);
      const float vec = sc::tah_entropy(x.data(), len, true);
      const float port = sc::tah_entropy(x.data(), len, false);
      if (std::isnan(port)) {
        REQUIRE(std::isnan(vec));
      } else {
        REQUIRE(vec == port);
      }
      ++compared;
    }
  REQUIRE(compared == 6 * 300);
  if (sc::simd::level() < sc::simd::Level::kAvx2)
    WARN("no AVX2 here (or SLOWPIPE_SIMD caps it): both sides ran the portable loop");
}

TEST_CASE("TAH-Quant: entropies of many tiles give each tile's portable float") {
  std::mt19937 rng(41);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 9);
  // Lengths for the portable loop (3), AVX2 only (8, 200: not a multiple of
  // 16) and the AVX-512 path where the CPU has it (16, 64, 1024).
  for (int64_t len : {3, 8, 16, 64, 200, 1024})
    for (int64_t n : {0, 1, 3, 4, 5, 11, 64}) {
      std::vector<float> x(static_cast<size_t>(len * n));
      for (size_t i = 0; i < x.size(); ++i) {
        const int kind = pick(rng);
        // Whole tiles of zeros, zeros of both signs, subnormals, scales 2^-140..2^127.
        const float scale = std::ldexp(1.0F, static_cast<int>(i / len) * 37 % 268 - 140);
        x[i] = (i / len) % 5 == 2 ? 0.0F
               : kind == 0        ? -0.0F
               : kind == 1        ? 1e-42F
                                  : normal(rng) * scale;
      }
      std::vector<const float*> at;
      for (int64_t i = 0; i < n; ++i) at.push_back(x.data() + (n - 1 - i) * len);  // any order
      std::vector<float> out(static_cast<size_t>(n), -1.0F);
      REQUIRE(tah::entropies(at.data(), len, n, out.data()));
      for (int64_t i = 0; i < n; ++i) {
        INFO("len " << len << " n " << n << " tile " << i);
        REQUIRE(out[i] == sc::tah_entropy(at[i], len, false));
      }
      // A NaN or an inf in any tile, at any place: not finite.
      for (int64_t i = 0; i < n * len; i += std::max<int64_t>(1, n * len / 7)) {
        const float keep = x[static_cast<size_t>(i)];
        x[static_cast<size_t>(i)] = i % 2 ? -INFINITY : std::numeric_limits<float>::quiet_NaN();
        INFO("len " << len << " n " << n << " bad element " << i);
        REQUIRE_FALSE(tah::entropies(at.data(), len, n, out.data()));
        x[static_cast<size_t>(i)] = keep;
      }
    }
}

TEST_CASE(
    "TAH-Quant: the statistics of 8 tiles at once, and one tile's range, equal the portable ones") {
  // stats_many folds 8 tiles of one length together (AVX2); each statistic
  // must be the portable loop's to the bit: the top two with ties, a max of
  // +0 and -0, all-negative tiles, subnormals; and finite exactly when it is.
  std::mt19937 rng(43);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 11);
  const auto same = [](const tah::TileStats& a, const tah::TileStats& b) {
    return std::memcmp(&a.top1, &b.top1, 4) == 0 && std::memcmp(&a.top2, &b.top2, 4) == 0 &&
           std::memcmp(&a.lo, &b.lo, 4) == 0 && std::memcmp(&a.hi, &b.hi, 4) == 0 &&
           a.finite == b.finite;
  };
  int checked = 0;
  for (int64_t len : {8, 16, 64, 1024})
    for (int round = 0; round < 60; ++round) {
      std::vector<float> x(static_cast<size_t>(8 * len));
      for (size_t i = 0; i < x.size(); ++i) {
        const int kind = pick(rng), tile = static_cast<int>(i / len);
        // Tile 1: negatives and zeros of both signs, so that lanes end on
        // different zeros and the fold's ties decide the sign of the max.
        x[i] = tile == 1   ? (kind % 3 == 0   ? -1.0F
                              : kind % 3 == 1 ? -0.0F
                                              : 0.0F)
               : tile == 2 ? -std::fabs(normal(rng))  // all negative
               : kind == 0 ? 3.0F                     // ties at the top
               : kind == 1 ? -3.0F
               : kind == 2 ? 1e-42F  // subnormal
                           : normal(rng);
      }
      if (round % 5 == 4)  // one tile not finite
        x[static_cast<size_t>(pick(rng) % 8 * len + round % len)] =
            round % 2 ? INFINITY : std::numeric_limits<float>::quiet_NaN();
      const float* at[8];
      int64_t lens[8];
      for (int t = 0; t < 8; ++t) at[t] = x.data() + (7 - t) * len, lens[t] = len;  // any order
      tah::TileStats got[8];
      tah::stats_many(at, lens, 8, got);
      for (int t = 0; t < 8; ++t) {
        INFO("len " << len << " round " << round << " tile " << t);
        const tah::TileStats want = tah::stats_of(at[t], len, false);
        REQUIRE(got[t].finite == want.finite);
        if (want.finite) REQUIRE(same(got[t], want));
        if (want.finite) {  // range_of: the same lo and hi to the bit (a rotated tile's grid)
          float lo = NAN, hi = NAN;
          tah::range_of(at[t], len, &lo, &hi);
          REQUIRE(std::memcmp(&lo, &want.lo, 4) == 0);
          REQUIRE(std::memcmp(&hi, &want.hi, 4) == 0);
        }
        ++checked;
      }
    }
  REQUIRE(checked == 4 * 60 * 8);
}

TEST_CASE("TAH-Quant: the pivot search finds the first largest magnitude") {
  std::mt19937 rng(43);
  std::normal_distribution<float> normal;
  int64_t found = 0;
  for (int64_t len : {2, 7, 8, 24, 64, 1024})
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> x(static_cast<size_t>(len));
      for (float& e : x) e = normal(rng);
      std::uniform_int_distribution<int64_t> at(0, len - 1);
      const int64_t a = at(rng), b = at(rng);
      x[static_cast<size_t>(a)] = 9.0F;
      if (trial % 3 == 0) x[static_cast<size_t>(b)] = -9.0F;  // a tie of the other sign
      int64_t first = 0;
      while (std::fabs(x[static_cast<size_t>(first)]) != 9.0F) ++first;
      INFO("len " << len << " trial " << trial);
      REQUIRE(tah::first_magnitude(x.data(), len, 9.0F) == first);
      REQUIRE(tah::first_magnitude(x.data(), len, 10.0F) == len);
      found += first == std::min(a, trial % 3 == 0 ? b : a);
    }
  REQUIRE(found == 6 * 200);
}

TEST_CASE("TAH-Quant: the AVX2 unpacking, one width or any, gives the naive loop's values") {
  std::mt19937 rng(37);
  std::uniform_int_distribution<int> byte(0, 255);
  int64_t ran = 0;
  for (int bits = 1; bits <= 4; ++bits)
    for (int64_t len : {8, 24, 32, 64, 96, 256, 1024}) {
      const size_t bytes = static_cast<size_t>(len * bits / 8);
      std::vector<uint8_t> in(bytes + 16);
      for (uint8_t& b : in) b = static_cast<uint8_t>(byte(rng));
      const float zero = -1.25F, step = 0.0625F;
      std::vector<float> want(static_cast<size_t>(len));
      for (size_t i = 0; i < want.size(); ++i) {
        uint32_t code = 0;
        for (int b = 0; b < bits; ++b) {
          const size_t pos = i * static_cast<size_t>(bits) + static_cast<size_t>(b);
          code |= static_cast<uint32_t>((in[pos / 8] >> (pos % 8)) & 1U) << b;
        }
        want[i] = zero + static_cast<float>(code) * step;
      }
      // Only the run's own bytes readable (the tail loop), then 16 spare ones (the wide loop).
      for (int64_t avail : {static_cast<int64_t>(bytes), static_cast<int64_t>(bytes) + 16}) {
        INFO("bits " << bits << " len " << len << " avail " << avail);
        std::vector<float> got(want.size(), NAN);
        const tah::DequantizeGroups unpack = tah::dequantize_groups_avx2_for(bits);
        if (unpack == nullptr) continue;
        unpack(in.data(), len, avail, zero, step, got.data());
        ++ran;
        REQUIRE(got == want);
        // The kernel for any width (a fractional budget's), its width as data.
        std::vector<float> any(want.size(), NAN);
        const tah::DequantizeAny unpack_any = tah::dequantize_any_avx2();
        REQUIRE(unpack_any != nullptr);
        unpack_any(in.data(), len, avail, zero, step, any.data(), bits);
        ++ran;
        REQUIRE(any == want);
      }
    }
  if (sc::simd::level() >= sc::simd::Level::kAvx2)
    REQUIRE(ran == 2 * 4 * 7 * 2);
  else
    WARN("no AVX2 here (or SLOWPIPE_SIMD caps it): the unpacking was not run");
}

TEST_CASE("TAH-Quant: the scales widened 8 tiles at a time equal widen's, tile by tile") {
  std::mt19937 rng(41);
  std::uniform_int_distribution<int> half(0, 0xFFFF);  // every fp16: inf, NaN, subnormals too
  for (int64_t n : {1, 7, 8, 9, 16, 100, 1000}) {
    std::vector<uint8_t> scales(static_cast<size_t>(4 * n));
    for (int64_t t = 0; t < n; ++t) {
      const auto z = static_cast<uint16_t>(half(rng)), s = static_cast<uint16_t>(half(rng));
      std::memcpy(scales.data() + 4 * t, &z, 2);
      std::memcpy(scales.data() + 4 * t + 2, &s, 2);
    }
    std::vector<float> zero(static_cast<size_t>(n)), step(zero.size());
    tah::widen_scales(scales.data(), n, zero.data(), step.data());
    for (int64_t t = 0; t < n; ++t) {
      uint16_t z, s;
      std::memcpy(&z, scales.data() + 4 * t, 2);
      std::memcpy(&s, scales.data() + 4 * t + 2, 2);
      INFO("n " << n << " tile " << t << " halves " << z << " " << s);
      const float wz = tah::widen(z), ws = tah::widen(s);
      REQUIRE((std::memcmp(&zero[static_cast<size_t>(t)], &wz, 4) == 0 ||
               (std::isnan(wz) && std::isnan(zero[static_cast<size_t>(t)]))));
      REQUIRE((std::memcmp(&step[static_cast<size_t>(t)], &ws, 4) == 0 ||
               (std::isnan(ws) && std::isnan(step[static_cast<size_t>(t)]))));
    }
  }
}

TEST_CASE("TAH-Quant: the Walsh-Hadamard's vector path gives the portable loop's floats") {
  std::mt19937 rng(43);
  std::normal_distribution<float> normal;
  for (int64_t g = 2; g <= 1024; g *= 2)
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<float> x(static_cast<size_t>(g));
      for (float& e : x) e = normal(rng) * std::ldexp(1.0F, trial % 30 - 15);
      x[static_cast<size_t>(trial) % x.size()] = trial % 2 ? 6e4F : -0.0F;  // a pivot, a zero
      std::vector<float> vec = x, port = x;
      sc::tah_hadamard(vec.data(), g, true);
      sc::tah_hadamard(port.data(), g, false);
      INFO("g " << g << " trial " << trial);
      REQUIRE(std::memcmp(vec.data(), port.data(), 4 * x.size()) == 0);
    }
  // Signed zeros from exact cancellations and from the input: every sum and
  // difference of equal values, and of +0 and -0 in each order.
  const std::vector<std::vector<float>> patterns = {
      {-0.0F}, {0.0F, -0.0F}, {-0.0F, 0.0F, 0.0F, -0.0F},
      {1.5F},  {1.5F, -1.5F}, {2.0F, 2.0F, -0.0F}};
  for (int64_t g = 2; g <= 64; g *= 2)
    for (const std::vector<float>& p : patterns) {
      std::vector<float> vec(static_cast<size_t>(g));
      for (size_t i = 0; i < vec.size(); ++i) vec[i] = p[i % p.size()];
      std::vector<float> port = vec;
      sc::tah_hadamard(vec.data(), g, true);
      sc::tah_hadamard(port.data(), g, false);
      INFO("g " << g << " pattern of " << p.size());
      REQUIRE(std::memcmp(vec.data(), port.data(), 4 * vec.size()) == 0);
    }
}

TEST_CASE("TAH-Quant: the encoder writes every byte of its message, whatever the buffer held") {
  std::mt19937 rng(47);
  std::normal_distribution<float> normal;
  const std::vector<sc::TahConfig> configs = {
      {300, 64, true}, {350, 64, true}, {380, 32, false}, {250, 8, true}, {300, 4, true}};
  for (const sc::TahConfig& c : configs)
    for (const sc::Shape& shape : std::vector<sc::Shape>{{4, 256}, {3, 100}, {2, 1600}}) {
      sc::TahQuant codec(c);
      std::vector<float> x(static_cast<size_t>(sc::shape_numel(shape)));
      for (float& e : x) e = normal(rng);
      x[5] = 300.0F;  // a rotated tile
      const size_t bytes = codec.payload_bytes(shape);
      std::vector<uint8_t> zeroed(bytes, 0x00), filled(bytes, 0xAB);
      codec.encode_payload(x.data(), shape, zeroed.data());
      codec.encode_payload(x.data(), shape, filled.data());
      INFO("bits " << c.bits_centi << " tile " << c.tile << " numel " << x.size());
      REQUIRE(zeroed == filled);
    }
}
