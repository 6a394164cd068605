// TAH-Quant (compressors/codecs/internal/tah_quant.h): messages and decoded values bit for bit
// against the naive reference (tah_reference.h) over shapes, tiles and
// budgets; exact sizes; the Walsh-Hadamard step (orthonormal, self-inverse,
// Sylvester's matrix); the entropy estimate; non-finite input refused; error
// falling with bits; what the rotation and the adaptive widths buy on inputs
// built to show it; the spec and its errors; the decoder's checks.
#include <ATen/ATen.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/internal/tah_quant.h"
#include "spec_checks.h"
#include "tah_reference.h"
#include "tests/common/parsed_spec.h"
#include "tests/compressors/tensor_values.h"

namespace sc = slowpipe::compressors;
namespace nv = slowpipe::compressors::naive;

using slowpipe::test::parsed;

namespace {

using slowpipe::test::floats;

// Activations with structure: Gaussian, a few channels 30x larger (outlier
// features), some tokens scaled, some exact zeros and one-hot tiles.
at::Tensor activation(const sc::Shape& shape, uint64_t seed) {
  at::manual_seed(seed);
  at::Tensor x = at::randn(at::IntArrayRef(shape));
  if (x.dim() >= 1 && x.size(-1) > 3) {
    x.select(-1, 1).mul_(30);
    x.select(-1, x.size(-1) - 2).mul_(-12);
  }
  at::Tensor flat = x.view({-1});
  for (int64_t i = 0; i < flat.numel(); i += 97) flat[i] = 0;
  return x;
}

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

// The page's size formula, written out on its own.
uint64_t formula(int centi, int64_t g, bool adaptive, const sc::Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  const uint64_t c = s.empty() ? 1 : static_cast<uint64_t>(s.back());
  if (n == 0) return 0;
  const uint64_t tokens = n / c, r = c % static_cast<uint64_t>(g);
  const uint64_t tf = tokens * (c / static_cast<uint64_t>(g)), tt = r ? tokens : 0;
  const uint64_t low = static_cast<uint64_t>(centi / 100),
                 frac = static_cast<uint64_t>(centi % 100);
  const uint64_t hf = frac * tf / 100, ht = frac * tt / 100;  // high tiles, one bit more
  uint64_t k = 0;                                             // log2 G
  while ((int64_t{1} << k) < g) ++k;
  const uint64_t header = (adaptive && frac ? tf + tt : 0) + tf * (1 + k);
  const uint64_t codes = g * (tf * low + hf) + r * (tt * low + ht);
  return 4 * (tf + tt) + ceil_div(header, 8) + ceil_div(codes, 8);
}

std::string spec_of(const nv::Tah& t) {
  std::string b = std::to_string(t.centi / 100);
  if (t.centi % 100) {
    char frac[4];
    std::snprintf(frac, sizeof frac, "%02d", t.centi % 100);
    b += std::string(".") + (frac[1] == '0' ? std::string(1, frac[0]) : std::string(frac));
  }
  return "tah:bits=" + b + ":tile=" + std::to_string(t.tile) + (t.adaptive ? "" : ":fixed");
}

double mse(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).pow(2).mean().item<double>();
}

}  // namespace

TEST_CASE("TAH-Quant: messages and decoded values equal the naive reference bit for bit") {
  const std::vector<nv::Tah> configs = {
      {300, 64, true},    {300, 64, false}, {350, 32, true},   {350, 32, false},
      {380, 64, true},    {380, 64, false}, {100, 16, true},   {800, 8, true},
      {250, 2, true},     {425, 128, true}, {425, 128, false}, {200, 4, false},
      {800, 1024, false}, {601, 256, true}, {175, 8, true},    {199, 4, false}};
  const std::vector<sc::Shape> shapes = {{2, 8, 64}, {3, 100},  {5, 7},  {4, 2, 200},
                                         {1, 1024},  {130},     {},      {2, 1, 3, 48},
                                         {6, 1300},  {1, 2048}, {16, 16}};
  uint64_t seed = 0;
  for (const nv::Tah& t : configs)
    for (const sc::Shape& shape : shapes) {
      const std::string spec = spec_of(t);
      INFO(spec << " shape dims " << shape.size() << " numel " << sc::shape_numel(shape));
      const at::Tensor x = activation(shape, ++seed);
      auto codec = sc::make_codec(spec);
      const sc::Message msg = codec->encode(x);
      const std::vector<float> xs = floats(x);
      const std::vector<uint8_t> want = nv::tah_encode(t, xs, shape);
      REQUIRE(msg.size() == want.size());
      REQUIRE(msg.size() == formula(t.centi, t.tile, t.adaptive, shape));
      REQUIRE(sc::wire_bytes(parsed(spec), shape) == msg.size());
      REQUIRE(msg == want);
      const std::vector<float> got = floats(codec->decode(msg, shape));
      const std::vector<float> ref = nv::tah_decode(t, want, shape, sc::shape_numel(shape));
      REQUIRE(got.size() == ref.size());
      REQUIRE(std::memcmp(got.data(), ref.data(), 4 * got.size()) == 0);
    }
}

TEST_CASE("TAH-Quant: one codec encoding shapes in turn gives each shape's reference message") {
  // The encoder keeps its width-choice buffers between calls: a large shape,
  // small ones with tail tiles, the large one again.
  const std::vector<nv::Tah> configs = {{350, 64, true}, {380, 32, true}, {175, 8, true}};
  const std::vector<sc::Shape> shapes = {{6, 1300}, {5, 7}, {2, 1, 3, 48}, {6, 1300}, {3, 100}};
  uint64_t seed = 500;
  for (const nv::Tah& t : configs) {
    auto codec = sc::make_codec(spec_of(t));
    for (const sc::Shape& shape : shapes) {
      INFO(spec_of(t) << " numel " << sc::shape_numel(shape));
      const at::Tensor x = activation(shape, ++seed);
      REQUIRE(codec->encode(x) == nv::tah_encode(t, floats(x), shape));
    }
  }
}

TEST_CASE("TAH-Quant: equal entropies at the high-width cut go to the lower tile numbers") {
  // 3000 tiles of 16 (above the ranking's histogram size) from four
  // patterns times 1, 2 or 4: a power-of-two scale leaves the entropy's
  // bits unchanged, so each pattern's 750 tiles tie, and budgets of 3.3 and
  // 3.7 bits (900 and 2100 high tiles) cut inside a run of ties.
  at::manual_seed(77);
  const at::Tensor patterns = at::randn({4, 16});
  at::Tensor x = at::empty({3, 16000});
  for (int64_t tile = 0; tile < 3000; ++tile) {
    const float scale = static_cast<float>(1 << (tile % 3));
    x.view({-1}).narrow(0, tile * 16, 16).copy_(patterns[(tile * 7) % 4] * scale);
  }
  for (int centi : {330, 370}) {
    const nv::Tah t{centi, 16, true};
    INFO(spec_of(t));
    REQUIRE(sc::make_codec(spec_of(t))->encode(x) == nv::tah_encode(t, floats(x), {3, 16000}));
  }
}

TEST_CASE("TAH-Quant: exact sizes, and the examples of the page") {
  // GPT-2 XL activation [8, 1024, 1600], G = 64: 204,800 tiles, 4 bytes of
  // scales each. bits=3: every tile 3 bits, 7 header bits (flag, 6 pivot bits).
  REQUIRE(sc::wire_bytes(parsed("tah:bits=3"), {8, 1024, 1600}) == 819200 + 179200 + 4915200);
  REQUIRE(sc::wire_bytes(parsed("tah:bits=3:fixed"), {8, 1024, 1600}) == 5913600);
  // bits=3.8: 163,840 tiles at 4 bits, the rest at 3; a width bit per tile.
  REQUIRE(sc::wire_bytes(parsed("tah:bits=3.8"), {8, 1024, 1600}) == 819200 + 204800 + 6225920);
  REQUIRE(sc::wire_bytes(parsed("tah:bits=3.8:fixed"), {8, 1024, 1600}) ==
          819200 + 179200 + 6225920);
  REQUIRE(sc::wire_bytes(parsed("tah:bits=4"), {64, 1024}) == 4096 + 896 + 32768);
  // [3, 100], G = 64: per token one full tile and a tail of 36; one of each
  // class at 4 bits: 24 + ceil((6 + 21) / 8) + (64 * 10 + 36 * 10) / 8.
  REQUIRE(sc::wire_bytes(parsed("tah:bits=3.5"), {3, 100}) == 24 + 4 + 125);
  for (const std::string spec : {"tah:bits=3", "tah:bits=2.5:tile=8", "tah:bits=5:tile=2:fixed"})
    for (const sc::Shape& shape : {sc::Shape{0}, sc::Shape{0, 4}, sc::Shape{3, 0}}) {
      INFO(spec);
      auto codec = sc::make_codec(spec);
      sc::Message msg;
      codec->encode_raw(nullptr, shape, msg);
      REQUIRE(msg.empty());
      REQUIRE(sc::wire_bytes(parsed(spec), shape) == 0);
      codec->decode_raw(msg.data(), msg.size(), shape, nullptr);
    }
  // As a sparsifier's value stage: the [rows, k] values, tiles along k.
  const sc::Shape s = {4, 500};
  REQUIRE(sc::wire_bytes(parsed("topk:0.1+tah:bits=3"), s) ==
          sc::wire_bytes(parsed("topk:0.1+none"), s) - 4 * 4 * 50 +
              formula(300, 64, true, {4, 50}));
  at::Tensor x = at::randn({4, 500});
  REQUIRE(sc::make_codec("topk:0.1+tah:bits=3")->encode(x).size() ==
          sc::wire_bytes(parsed("topk:0.1+tah:bits=3"), s));
}

TEST_CASE("TAH-Quant: the Walsh-Hadamard step is Sylvester's orthonormal matrix, its own inverse") {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  for (int64_t g = 2; g <= 1024; g *= 2) {
    INFO("G = " << g);
    // Columns: the transform of each unit vector, exactly (+-1) / sqrt(G).
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(g)));
    std::vector<std::vector<float>> h(g, std::vector<float>(g, 0.0F));
    for (int64_t j = 0; j < g; ++j) {
      h[j][j] = 1.0F;
      sc::tah_hadamard(h[j].data(), g);
      for (int64_t i = 0; i < g; ++i)
        REQUIRE(h[j][i] ==
                (__builtin_popcountll(static_cast<uint64_t>(i & j)) % 2 ? -scale : scale));
    }
    // H Hᵀ = I (within rounding of 1/sqrt(G)).
    if (g <= 256)
      for (int64_t a = 0; a < g; ++a)
        for (int64_t b = 0; b < g; ++b) {
          double dot = 0;
          for (int64_t i = 0; i < g; ++i) dot += static_cast<double>(h[a][i]) * h[b][i];
          REQUIRE(std::fabs(dot - (a == b ? 1.0 : 0.0)) < 1e-6);
        }
    // Norm kept; applying it twice gives the input back.
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<float> x(g);
      for (float& v : x) v = normal(rng) * (trial == 4 ? 1e4F : 1.0F);
      std::vector<float> y = x;
      sc::tah_hadamard(y.data(), g);
      double nx = 0, ny = 0, diff = 0;
      for (int64_t i = 0; i < g; ++i) {
        nx += static_cast<double>(x[i]) * x[i];
        ny += static_cast<double>(y[i]) * y[i];
      }
      REQUIRE(std::fabs(std::sqrt(ny) - std::sqrt(nx)) <= 1e-5 * std::sqrt(nx));
      sc::tah_hadamard(y.data(), g);
      for (int64_t i = 0; i < g; ++i) diff = std::max(diff, std::fabs(double(y[i]) - x[i]));
      REQUIRE(diff <= 1e-5 * std::sqrt(nx));
      REQUIRE(y != x);  // the control: not bit-exact in general, so the bounds do the work
    }
  }
}

TEST_CASE("TAH-Quant: tile statistics, vector path against the portable loop and a sort") {
  std::mt19937 rng(12);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 5);
  for (int64_t len : {2, 5, 8, 16, 24, 64, 1024}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<float> x(static_cast<size_t>(len));
      for (float& v : x) {
        const int kind = pick(rng);  // ties, zeros of both signs, spikes
        v = kind == 0   ? 1.5F
            : kind == 1 ? -0.0F
            : kind == 2 ? 0.0F
                        : normal(rng) * (kind == 5 ? 100.0F : 1.0F);
      }
      if (trial % 3 == 0) x[static_cast<size_t>(trial) % x.size()] = -1e4F;  // one dominant element
      std::vector<float> mags(x.size());
      for (size_t i = 0; i < x.size(); ++i) mags[i] = std::fabs(x[i]);
      std::sort(mags.rbegin(), mags.rend());
      const std::array<float, 4> want = {mags[0], mags.size() > 1 ? mags[1] : 0.0F,
                                         *std::min_element(x.begin(), x.end()) + 0.0F,
                                         *std::max_element(x.begin(), x.end())};
      for (bool vector : {false, true}) {
        INFO("len " << len << " trial " << trial << " vector " << vector);
        const std::array<float, 5> got = sc::tah_tile_stats(x.data(), len, vector);
        REQUIRE(got[0] == want[0]);
        REQUIRE(got[1] == want[1]);
        REQUIRE(got[2] == want[2]);
        REQUIRE(got[3] == want[3]);  // +0 == -0: the sign of a zero max is not used
        REQUIRE(got[4] == 1.0F);
        // One NaN or inf anywhere (every lane, the tail): not finite.
        std::vector<float> y = x;
        y[static_cast<size_t>(trial) % y.size()] =
            trial % 2 ? std::numeric_limits<float>::quiet_NaN() : -INFINITY;
        REQUIRE(sc::tah_tile_stats(y.data(), len, vector)[4] == 0.0F);
      }
    }
  }
}

TEST_CASE("TAH-Quant: the fp16 rounding up is the same in hardware (F16C) and software") {
  // Every fp16 value, its neighbours in float, and random floats of every
  // magnitude, both signs; zeros, subnormals and the ends of the range.
  std::vector<float> vs = {0.0F,     -0.0F,     1e-45F,   -1e-45F,   1e-8F,    -1e-8F,
                           5.96e-8F, -5.96e-8F, 65504.0F, -65504.0F, 65505.0F, -65505.0F,
                           65520.0F, -65520.0F, 1e30F,    -1e30F,    3.4e38F,  -3.4e38F};
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;  // inf and NaN
    const auto bits = static_cast<uint16_t>(h);
    const float f = static_cast<float>(c10::Half(bits, c10::Half::from_bits()));
    vs.push_back(f);
    vs.push_back(std::nextafter(f, 1e9F));
    vs.push_back(std::nextafter(f, -1e9F));
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mant(1.0F, 2.0F);
  std::uniform_int_distribution<int> expo(-40, 20);
  for (int i = 0; i < 200000; ++i)
    vs.push_back((i % 2 ? -1.0F : 1.0F) * std::ldexp(mant(rng), expo(rng)));
  size_t differ = 0;
  for (float v : vs) {
    const uint16_t hw = sc::tah_half_up(v, true), sw = sc::tah_half_up(v, false);
    if (hw != sw) {
      ++differ;
      INFO("v = " << v << " hardware " << hw << " software " << sw);
      CHECK(hw == sw);
    }
    // The rounding's contract: the smallest fp16 >= v (within the finite range).
    const float up = static_cast<float>(c10::Half(sw, c10::Half::from_bits()));
    if (std::fabs(v) <= 65504.0F) REQUIRE(up >= v);
  }
  REQUIRE(differ == 0);
}

TEST_CASE("TAH-Quant: the entropy estimate is close to Shannon's entropy") {
  for (float u = 1e-30F; u < 1e30F; u *= 1.37F)
    REQUIRE(std::fabs(sc::tah_log2(u) - std::log2(static_cast<double>(u))) < 1.1e-4);
  std::mt19937 rng(8);
  std::exponential_distribution<float> expo(1.0F);
  for (int64_t len : {2, 7, 64, 1000}) {
    for (float scale : {1e-30F, 1.0F, 1e30F}) {
      std::vector<float> x(len);
      for (float& v : x) v = expo(rng) * scale * (rng() % 2 ? 1.0F : -1.0F);
      double sum = 0, h = 0;
      for (float v : x) sum += std::fabs(v);
      for (float v : x)
        if (v != 0) h -= std::fabs(v) / sum * std::log2(std::fabs(v) / sum);
      INFO("len " << len << " scale " << scale);
      REQUIRE(std::fabs(sc::tah_entropy(x.data(), len) - h) < 2e-3);
      REQUIRE(sc::tah_entropy(x.data(), len) == nv::tah_entropy(x.data(), len));
    }
  }
  const std::vector<float> one_hot = {0, 0, -5, 0}, flat = {2, -2, 2, -2}, zeros = {0, 0};
  REQUIRE(sc::tah_entropy(one_hot.data(), 4) == 0.0F);
  REQUIRE(std::fabs(sc::tah_entropy(flat.data(), 4) - 2.0F) < 1e-3);
  REQUIRE(sc::tah_entropy(zeros.data(), 2) == 0.0F);
}

TEST_CASE("TAH-Quant: NaN and inf are refused, under every scheme and after topk") {
  // At 3.5 bits the entropy pass looks: six tiles, four through its
  // interleaved path (index 77) and two one at a time (index 300).
  for (const std::string spec : {"tah:bits=3", "tah:bits=4:fixed", "topk:0.5+tah:bits=3",
                                 "ef(tah:bits=2.5:tile=8)", "tah:bits=3.5"}) {
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      const int64_t at = spec == "tah:bits=3.5" && std::isnan(bad) ? 300 : 77;
      INFO(spec << " " << bad);
      at::Tensor x = at::randn({2, 3, 64});
      x.view({-1})[at] = bad;
      sc::ChannelContext ctx;
      auto channel = sc::make_channel(parsed(spec), ctx);
      try {
        channel->transfer(x, at::arange(2, at::kLong), nullptr);
        FAIL("accepted a non-finite value");
      } catch (const slowpipe::DataError& e) {
        CHECK_THAT(e.what(), Catch::Contains("non-finite value"));
        if (spec.rfind("tah", 0) == 0)
          CHECK_THAT(e.what(), Catch::Contains("at index " + std::to_string(at)));
      }
    }
  }
}

TEST_CASE("TAH-Quant: the error falls as the bit budget grows") {
  const at::Tensor x = activation({8, 32, 256}, 42);
  for (const bool fixed : {false, true}) {
    double last = INFINITY;
    for (const std::string b :
         {"1", "1.5", "2", "2.25", "3", "3.25", "3.5", "3.8", "4", "5", "6", "7", "7.9", "8"}) {
      const std::string spec = "tah:bits=" + b + (fixed ? ":fixed" : "");
      auto codec = sc::make_codec(spec);
      const double e = mse(codec->decode(codec->encode(x), {8, 32, 256}), x);
      INFO(spec << " mse " << e);
      REQUIRE(e < last);
      last = e;
    }
  }
}

TEST_CASE("TAH-Quant: pivot + rotation beat a plain min-max tile on outlier tiles") {
  // Every tile holds one outlier 100x the rest: rotated, the outlier becomes
  // the zero point; a min-max grid spends its levels on the outlier's range.
  at::manual_seed(4);
  at::Tensor x = at::randn({16, 512});
  for (int64_t j = 5; j < 512; j += 64) x.select(1, j).fill_(300);
  auto tah = sc::make_codec("tah:bits=3:fixed");
  auto plain = sc::make_codec("q3:group=64:minmax");
  const double e_tah = mse(tah->decode(tah->encode(x), {16, 512}), x);
  const double e_plain = mse(plain->decode(plain->encode(x), {16, 512}), x);
  INFO("tah " << e_tah << " minmax " << e_plain);
  REQUIRE(e_tah < e_plain / 10);
}

TEST_CASE("TAH-Quant: adaptive widths beat fixed ones on tiles of two kinds") {
  // Not a guarantee of the allocator (it ranks by entropy, not by error), a
  // property of this input: a random half of the tiles are one-hot (entropy 0,
  // near exact after rotation at any width), the others spread (high entropy).
  // Budget 3.5 bits: adaptive gives the 4-bit half to the spread tiles, fixed
  // to every other tile whatever it holds.
  at::manual_seed(6);
  at::Tensor x = at::randn({32, 512});
  const at::Tensor one_hot = at::rand({32, 8}) < 0.5;
  for (int64_t row = 0; row < 32; ++row)
    for (int64_t tile = 0; tile < 8; ++tile)
      if (one_hot[row][tile].item<bool>()) {
        at::Tensor t = x[row].narrow(0, tile * 64, 64);
        t.zero_();
        t[17] = 1.5;
      }
  const sc::Shape shape = {32, 512};
  auto adaptive = sc::make_codec("tah:bits=3.5");
  auto fixed = sc::make_codec("tah:bits=3.5:fixed");
  const double e_a = mse(adaptive->decode(adaptive->encode(x), shape), x);
  const double e_f = mse(fixed->decode(fixed->encode(x), shape), x);
  INFO("adaptive " << e_a << " fixed " << e_f);
  REQUIRE(e_a < 0.75 * e_f);
  // The control: on i.i.d. Gaussian tiles the two are close (no promise either way).
  at::Tensor g = at::randn({32, 512});
  const double g_a = mse(adaptive->decode(adaptive->encode(g), shape), g);
  const double g_f = mse(fixed->decode(fixed->encode(g), shape), g);
  INFO("gaussian: adaptive " << g_a << " fixed " << g_f);
  REQUIRE(g_a < 1.3 * g_f);
  REQUIRE(g_f < 1.3 * g_a);
}

TEST_CASE("TAH-Quant: spec, canonical form, plot facts and errors") {
  REQUIRE(sc::canonical_spec(parsed("tah:bits=3:tile=64")) == "tah:bits=3");
  REQUIRE(sc::canonical_spec(parsed("tah:tile=32:bits=3.50:adaptive")) == "tah:bits=3.5:tile=32");
  REQUIRE(sc::canonical_spec(parsed("tah:bits=03.05:fixed:tile=64")) == "tah:bits=3.05:fixed");
  REQUIRE(sc::canonical_spec(parsed("tah:bits=4:fixed")) == "tah:bits=4:fixed");
  REQUIRE(sc::canonical_spec(parsed("ef(tah:bits=3)")) == "ef(tah:bits=3)");
  REQUIRE(sc::canonical_spec(parsed("topk:0.1+tah:bits=2.5")) == "topk:0.1+tah:bits=2.5");
  REQUIRE(sc::GradientSpec::parse("tah:bits=3").resolved().text() == "tah:bits=3");
  REQUIRE(sc::plot_facts(sc::parse_spec("tah:bits=3.5").stages.front()).bits == 3.5);
  REQUIRE(std::isnan(sc::plot_facts(sc::parse_spec("tah").stages.front()).bits));
  for (const std::string ok :
       {"tah:bits=3", "aq(tah:bits=3)", "ef21(tah:bits=2:tile=8:fixed)", "topk:0.2+tah:bits=4"}) {
    sc::validate_spec(ok, false);
    sc::validate_spec(ok, true);
  }
  slowpipe::test::require_refused({
      {"tah", "at position 4: expected ':bits=B' after 'tah'"},
      {"tah:bits=9", "at position 5: expected bits=B"},
      {"tah:bits=0.5", "expected bits=B"},
      {"tah:bits=3.125", "expected bits=B"},
      {"tah:bits=3.", "expected bits=B"},
      {"tah:bits=x", "expected bits=B"},
      {"tah:bits=3:tile=48", "at position 12: expected tile=G, a power of two in 2..1024"},
      {"tah:bits=3:tile=1", "expected tile=G"},
      {"tah:bits=3:tile=2048", "expected tile=G"},
      {"tah:bits=3:fixed:adaptive", "'adaptive' conflicts with 'fixed'"},
      {"tah:bits=3:bits=4", "'bits=4' conflicts with 'bits=3'"},
      {"tah:bits=3:row", "expected a tah option (bits=B, tile=G, fixed, adaptive), got 'row'"},
      {"tah:bits=3+q8", "'+' may only follow topk or randk"},
  });
}

TEST_CASE("TAH-Quant: the decoder refuses malformed messages") {
  const sc::Shape shape = {4, 128};  // 8 full tiles, G = 64, 4 of them at 4 bits
  auto codec = sc::make_codec("tah:bits=3.5");
  const at::Tensor x = activation(shape, 9);
  const sc::Message msg = codec->encode(x);
  const size_t header = 4 * 8;
  REQUIRE_NOTHROW(codec->decode(msg, shape));
  sc::Message nan_step = msg;
  nan_step[2] = 0xFF;
  nan_step[3] = 0x7F;  // fp16 NaN
  REQUIRE_THROWS_AS(codec->decode(nan_step, shape), slowpipe::DataError);
  sc::Message negative_step = msg;
  negative_step[3] |= 0x80;
  if (negative_step[2] != 0 || (negative_step[3] & 0x7F) != 0)
    REQUIRE_THROWS_AS(codec->decode(negative_step, shape), slowpipe::DataError);
  sc::Message inf_zero = msg;
  inf_zero[4] = 0x00;
  inf_zero[5] = 0x7C;  // fp16 +inf
  REQUIRE_THROWS_AS(codec->decode(inf_zero, shape), slowpipe::DataError);
  // The width map (8 bits, 4 set): one more or one fewer high tile.
  sc::Message widths = msg;
  widths[header] ^= 0x01;
  try {
    codec->decode(widths, shape);
    FAIL("accepted a width map with the wrong count");
  } catch (const slowpipe::DataError& e) {
    CHECK_THAT(e.what(), Catch::Contains("high-width tiles, expected 4 + 0"));
  }
  // Longer maps (counted a word at a time) and maps with tail tiles.
  for (const sc::Shape& other : {sc::Shape{40, 128}, sc::Shape{4, 100}}) {
    const sc::Message good = codec->encode(activation(other, 11));
    REQUIRE_NOTHROW(codec->decode(good, other));
    const size_t map_at = 4 * 2 * static_cast<size_t>(other[0]);  // two tiles a token
    for (int bit : {0, 3, 70}) {
      if (bit >= other[0] * 2) continue;
      sc::Message bad = good;
      bad[map_at + static_cast<size_t>(bit / 8)] ^= static_cast<uint8_t>(1U << (bit % 8));
      INFO("shape [" << other[0] << ", " << other[1] << "], bit " << bit);
      REQUIRE_THROWS_WITH(codec->decode(bad, other), Catch::Contains("high-width tiles, expected"));
    }
  }
  // A pivot on an unrotated tile; the rotation fields start after the 8 width bits.
  std::vector<uint8_t> bits(msg.begin() + header, msg.end());
  const auto rotated = [&](int tile) { return nv::tah_get(bits, 8 + 7 * tile, 1) != 0; };
  int plain = 0;
  while (plain < 8 && rotated(plain)) ++plain;
  REQUIRE(plain < 8);
  sc::Message pivot = msg;
  const uint64_t bit = 8 * header + 8 + 7 * plain + 1;
  pivot[bit / 8] ^= static_cast<uint8_t>(1U << (bit % 8));
  REQUIRE_THROWS_AS(codec->decode(pivot, shape), slowpipe::DataError);
  sc::Message cut(msg.begin(), msg.end() - 1);
  REQUIRE_THROWS_AS(codec->decode(cut, shape), slowpipe::DataError);
}

TEST_CASE("TAH-Quant: the rotation is used where the rule says, and only there") {
  // [1, 128]: tile 0 has a dominant element (rotated), tile 1 two equal peaks (not).
  std::vector<float> x(128, 0.25F);
  x[9] = -8.0F;
  x[70] = 4.0F;
  x[100] = -4.0F;
  auto codec = sc::make_codec("tah:bits=4:fixed");
  sc::Message msg;
  codec->encode_raw(x.data(), {1, 128}, msg);
  const std::vector<uint8_t> header(msg.begin() + 8, msg.begin() + 10);  // 2 x 7 bits, no width map
  REQUIRE(nv::tah_get(header, 0, 1) == 1);
  REQUIRE(nv::tah_get(header, 1, 6) == 9);
  REQUIRE(nv::tah_get(header, 7, 1) == 0);
  REQUIRE(nv::tah_get(header, 8, 6) == 0);
  // Rotated, tile 0 is 63 values of 0.25 and one of -8: after the swap and the
  // transform, a constant -8/8 plus a +-0.25 pattern; it decodes far better
  // than its 16-level min-max grid over [-8, 0.25] would (step 0.55).
  std::vector<float> y(128);
  codec->decode_raw(msg.data(), msg.size(), {1, 128}, y.data());
  double worst = 0;
  for (int i = 0; i < 64; ++i) worst = std::max(worst, std::fabs(double(y[i]) - x[i]));
  REQUIRE(worst < 0.05);
}

TEST_CASE("TAH-Quant: any finite input decodes to finite values, bit for bit as the reference") {
  // Random bit patterns (huge, tiny, subnormal values, signed zeros), one
  // dominant element per tile now and then: the fp16 zero point and step
  // saturate, the rotation is skipped beyond the fp16 range, nothing overflows.
  std::mt19937 rng(17);
  for (const std::string spec :
       {"tah:bits=3", "tah:bits=2.5:tile=8", "tah:bits=8:tile=2", "tah:bits=1.01:tile=16:fixed"}) {
    const nv::Tah t = spec == "tah:bits=3"            ? nv::Tah{300, 64, true}
                      : spec == "tah:bits=2.5:tile=8" ? nv::Tah{250, 8, true}
                      : spec == "tah:bits=8:tile=2"   ? nv::Tah{800, 2, true}
                                                      : nv::Tah{101, 16, false};
    auto codec = sc::make_codec(spec);
    for (int trial = 0; trial < 40; ++trial) {
      const sc::Shape shape = {3, 1 + static_cast<int64_t>(rng() % 150)};
      std::vector<float> x(static_cast<size_t>(3 * shape[1]));
      for (float& v : x) {
        uint32_t bits = rng();
        std::memcpy(&v, &bits, 4);
        if (!std::isfinite(v) || rng() % 3 == 0)
          v = std::ldexp(1.0F, static_cast<int>(rng() % 40)) * (rng() % 2 ? 1.0F : -1.0F);
        if (rng() % 7 == 0) v = rng() % 2 ? 0.0F : -0.0F;
      }
      INFO(spec << " trial " << trial);
      sc::Message msg;
      codec->encode_raw(x.data(), shape, msg);
      const std::vector<uint8_t> want = nv::tah_encode(t, x, shape);
      size_t first = 0;
      while (first < msg.size() && first < want.size() && msg[first] == want[first]) ++first;
      INFO("first difference at byte " << first << " of " << msg.size() << ", C = " << shape[1]);
      REQUIRE(msg == want);
      std::vector<float> y(x.size());
      codec->decode_raw(msg.data(), msg.size(), shape, y.data());
      for (float v : y) REQUIRE(std::isfinite(v));
      const std::vector<float> ref = nv::tah_decode(t, msg, shape, sc::shape_numel(shape));
      REQUIRE(std::memcmp(y.data(), ref.data(), 4 * y.size()) == 0);
    }
  }
}
