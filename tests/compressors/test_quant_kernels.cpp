// The AVX-512 quantization kernels against the portable loops: channel-mode
// max-abs statistics and quantize + pack must agree bit for bit, on ragged
// shapes (vector tails, column blocks) and on NaN, infinities and subnormals.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compressors/codecs/quant_kernels.h"
#include "compressors/codecs/internal/quant_simd.h"

namespace sc = slowpipe::compressors;

namespace {
std::vector<float> values(int64_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng) * (rng() % 5 == 0 ? 30.0F : 1.0F);
  if (specials) {
    const float kSpecials[] = {std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::denorm_min(),
                               -0.0F,
                               1e30F,
                               -1e30F};
    for (int64_t i = 0; i < n; i += 37) x[i] = kSpecials[(i / 37) % 7];
  }
  return x;
}
sc::GroupLayout channel_layout(int64_t rows, int64_t cols) {
  sc::GroupLayout l;
  l.mode = sc::ScaleMode::kChannel;
  l.numel = rows * cols;
  l.channels = cols;
  l.groups = cols;
  return l;
}
}  // namespace

TEST_CASE("Quant kernels: AVX-512 paths equal the portable loops bit for bit") {
  if (!sc::simd::available()) {
    WARN("this CPU has no AVX-512F: only the portable kernels run here");
    return;
  }
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1, 1}, {3, 15}, {5, 17}, {4, 256}, {7, 300}, {2, 1029}, {64, 1024}, {1, 5000}};
  for (auto [rows, cols] : shapes)
    for (bool specials : {false, true}) {
      INFO("x [" << rows << ", " << cols << "] specials " << specials);
      const std::vector<float> x =
          values(rows * cols, static_cast<uint32_t>(rows * cols), specials);
      const sc::GroupLayout layout = channel_layout(rows, cols);

      std::vector<float> m_fast(cols), m_slow(cols);
      sc::group_maxabs(x.data(), layout, m_fast.data(), /*use_simd=*/true);
      sc::group_maxabs(x.data(), layout, m_slow.data(), /*use_simd=*/false);
      // Bit for bit: NaN statistics (a NaN in the column) must agree too.
      REQUIRE(std::memcmp(m_fast.data(), m_slow.data(), 4 * cols) == 0);

      // A finite grid from the statistics of the same values without specials.
      const std::vector<float> clean =
          values(rows * cols, static_cast<uint32_t>(rows * cols), false);
      std::vector<float> s(cols);
      sc::group_maxabs(clean.data(), layout, s.data(), false);
      for (int bits : {1, 2, 3, 4, 8}) {
        INFO("bits " << bits);
        sc::QuantizeArgs args;
        args.bits = bits;
        args.levels = bits == 1 ? 2 : (1 << bits) - 1;
        sc::GroupGrid grid;
        for (int64_t c = 0; c < cols; ++c) {
          float step = 2.0F * (s[c] > 0 ? s[c] : 1.0F) / static_cast<float>(args.levels - 1);
          grid.lo.push_back(-s[c]);
          grid.step.push_back(step);
          grid.inv_step.push_back(1.0F / step);
        }
        std::vector<uint8_t> fast(sc::packed_bytes(rows * cols, bits), 0x11);
        std::vector<uint8_t> slow(fast.size(), 0x22);
        args.simd = true;
        sc::quantize_pack(x.data(), layout, grid, args, fast.data());
        args.simd = false;
        sc::quantize_pack(x.data(), layout, grid, args, slow.data());
        REQUIRE(fast == slow);
      }
    }
}
