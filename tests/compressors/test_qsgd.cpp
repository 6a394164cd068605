// QSGD (compressors/codecs/internal/qsgd.h): exact wire sizes, the stored L2 norms and the
// levels against a naive reference, unbiasedness over many seeds, the spec and
// its errors, the decoder's checks, that it is not q<b>:stochastic:group, and
// the SIMD level loops against the portable one.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/internal/qsgd.h"
#include "compressors/codecs/internal/qsgd_kernels.h"
#include "compressors/codecs/quant_kernels.h"
#include "spec_checks.h"
#include "tests/common/parsed_spec.h"
#include "tests/compressors/tensor_values.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {

using slowpipe::test::floats;

// The naive norm: sum of squares in double, square root, rounded up to fp32.
float naive_norm(const std::vector<float>& x, size_t start, size_t len) {
  double sq = 0;
  for (size_t i = start; i < start + len; ++i) sq += static_cast<double>(x[i]) * x[i];
  const double norm = std::sqrt(sq);
  float f = static_cast<float>(norm);
  if (f < norm) f = std::nextafter(f, INFINITY);
  return f;
}

}  // namespace

TEST_CASE("QSGD: exact wire sizes") {
  // 4 bytes per bucket + (1 + ceil(log2(S + 1))) bits per element.
  // [64, 1024], s = 4, D = 128: 512 norms (2,048 B) + 65,536 * 4 bits (32,768 B).
  REQUIRE(sc::wire_bytes(parsed("qsgd:s=4"), {64, 1024}) == 34816);
  REQUIRE(sc::wire_bytes(parsed("qsgd:s=1"), {64, 1024}) == 2048 + 16384);            // 2 bits
  REQUIRE(sc::wire_bytes(parsed("qsgd:s=3:bucket=512"), {64, 1024}) == 512 + 24576);  // 3 bits
  REQUIRE(sc::wire_bytes(parsed("qsgd:s=127"), {10}) == 4 + 10);                      // 8 bits
  REQUIRE(sc::wire_bytes(parsed("qsgd:s=15"), {3, 100}) ==
          4 * 3 + (300 * 5 + 7) / 8);  // 300 = 2*128 + 44
  REQUIRE(sc::wire_bytes(parsed("topk:0.1+qsgd:s=4"), {2, 1000}) ==
          sc::wire_bytes(parsed("topk:0.1+none"), {2, 1000}) - 4 * 200 + 4 * 2 + 100);
  for (const std::string spec : {"qsgd:s=1", "qsgd:s=4:bucket=7", "qsgd:s=127:bucket=1"}) {
    auto codec = sc::make_codec(spec, 1);
    for (const sc::Shape& shape :
         {sc::Shape{3, 50}, sc::Shape{1}, sc::Shape{0, 4}, sc::Shape{5, 2, 9}})
      REQUIRE(codec->encode(at::randn(at::IntArrayRef(shape))).size() ==
              sc::wire_bytes(parsed(spec), shape));
  }
}

TEST_CASE("QSGD: L2-norm scaling and levels against a naive reference") {
  at::manual_seed(1);
  for (const std::string spec :
       {"qsgd:s=1", "qsgd:s=4", "qsgd:s=5:bucket=33", "qsgd:s=127:bucket=1000"}) {
    INFO(spec);
    auto codec = sc::make_codec(spec, 3);
    const auto& cfg = dynamic_cast<const sc::Qsgd&>(*codec).config();
    const at::Tensor x = at::randn({7, 150}) * 3;
    const std::vector<float> xv = floats(x);
    const sc::Message msg = codec->encode(x);
    const std::vector<float> out = floats(codec->decode(msg, {7, 150}));
    const int64_t n = 1050, buckets = (n + cfg.bucket - 1) / cfg.bucket;
    int rounded_up = 0, rounded_down = 0;
    for (int64_t b = 0; b < buckets; ++b) {
      const size_t start = b * cfg.bucket, len = std::min<int64_t>(cfg.bucket, n - start);
      const float norm = naive_norm(xv, start, len);
      float stored;
      std::memcpy(&stored, msg.data() + 4 * b, 4);
      REQUIRE(stored == norm);
      for (size_t i = start; i < start + len; ++i) {
        const double t = cfg.levels * std::fabs(static_cast<double>(xv[i])) / norm;
        const double lo = std::floor(t), hi = std::min<double>(lo + 1, cfg.levels);
        const double mag = std::fabs(static_cast<double>(out[i]));
        const bool is_lo = mag == static_cast<float>(norm * lo / cfg.levels);
        const bool is_hi = mag == static_cast<float>(norm * hi / cfg.levels);
        INFO("element " << i << ": x " << xv[i] << ", out " << out[i] << ", t " << t);
        REQUIRE((is_lo || is_hi));
        rounded_up += is_hi && !is_lo;
        rounded_down += is_lo && !is_hi;
        if (out[i] != 0) REQUIRE(std::signbit(out[i]) == std::signbit(xv[i]));
      }
    }
    // Stochastic, not nearest: both directions occur.
    REQUIRE(rounded_up > 0);
    REQUIRE(rounded_down > 0);
  }
  // The norm, not the max: one large value among small ones keeps the small
  // ones' level near 0, and the large one decodes to at most the norm.
  auto codec = sc::make_codec("qsgd:s=2:bucket=4", 0);
  const at::Tensor x = at::tensor({3.0F, 4.0F, 0.0F, 0.0F});
  const std::vector<float> out = floats(codec->decode(codec->encode(x), {4}));
  for (float v : out) {
    const bool on_grid = v == 0.0F || v == 2.5F || v == 5.0F;  // 5 * {0, 1/2, 1}
    REQUIRE(on_grid);
  }
}

TEST_CASE("QSGD: unbiased (the mean over many encodes approaches the input)") {
  at::manual_seed(2);
  const at::Tensor x = at::randn({4, 64});
  auto codec = sc::make_codec("qsgd:s=2:bucket=64", 5);
  at::Tensor sum = at::zeros({4, 64}, at::kDouble);
  const int runs = 4000;
  for (int k = 0; k < runs; ++k)  // every encode draws new uniforms (the counter)
    sum += codec->decode(codec->encode(x), {4, 64}).to(at::kDouble);
  const at::Tensor mean = sum / runs;
  // Each element's variance is at most (norm / (2 s))^2: 5 standard errors.
  double max_norm = 0;
  for (int row = 0; row < 4; ++row)
    max_norm = std::max(max_norm, x.slice(0, row, row + 1).norm().item<double>());
  const double tol = 5 * max_norm / (2 * 2) / std::sqrt(runs);
  REQUIRE((mean - x.to(at::kDouble)).abs().max().item<double>() < tol);
  // The control: nearest rounding on the same grid is biased far beyond tol.
  double nearest_bias = 0;
  const std::vector<float> xv = floats(x);
  for (int64_t i = 0; i < 256; ++i) {
    const double norm = x.slice(0, i / 64, i / 64 + 1).norm().item<double>();
    const double level = std::round(2 * std::fabs(xv[i]) / norm);
    nearest_bias = std::max(nearest_bias, std::fabs(norm * level / 2 - std::fabs(xv[i])));
  }
  REQUIRE(nearest_bias > 4 * tol);
}

TEST_CASE("QSGD: spec, errors with positions, state, decoder checks") {
  REQUIRE(sc::canonical_spec(parsed("qsgd:bucket=128:s=4")) == "qsgd:s=4");
  REQUIRE(sc::canonical_spec(parsed("ef(qsgd:s=8:bucket=512)")) == "ef(qsgd:s=8:bucket=512)");
  REQUIRE(sc::GradientSpec::parse("qsgd:s=4").resolved().text() == "qsgd:s=4");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"qsgd", "at position 5: expected ':s=S'"},
      {"qsgd:4", "at position 6: expected a qsgd option"},
      {"qsgd:s=0", "at position 6: expected s=S"},
      {"qsgd:s=128", "at position 6: expected s=S"},
      {"qsgd:s=4:bucket=0", "at position 10: expected bucket=D"},
      {"qsgd:s=4:s=8", "at position 10: 's=8' conflicts with 's=4'"},
      {"qsgd:s=4+q8", "'+' may only follow topk or randk"},
  };
  slowpipe::test::require_refused(bad);
  // The rounding stream is state: a restored counter repeats the bytes.
  auto a = sc::make_codec("qsgd:s=3", 4), b = sc::make_codec("qsgd:s=3", 4);
  const at::Tensor x = at::randn({5, 40});
  a->encode(x);
  sc::CodecState st;
  a->save_state("", st);
  b->load_state("", st);
  const sc::Message m = a->encode(x);
  REQUIRE(b->encode(x) == m);
  REQUIRE(sc::make_codec("qsgd:s=3", 4)->encode(x) != m);  // the control
  // Decoder: a level above s, a negative norm, a wrong length.
  auto c = sc::make_codec("qsgd:s=4", 4);  // 3 level bits: 5..7 are not levels
  sc::Message mc = c->encode(x);
  mc[4 * 2] = 0xFF;  // first code byte (2 buckets): level 7
  REQUIRE_THROWS_AS(c->decode(mc, {5, 40}), slowpipe::DataError);
  mc = c->encode(x);
  const float neg = -1.0F;
  std::memcpy(mc.data(), &neg, 4);
  REQUIRE_THROWS_AS(c->decode(mc, {5, 40}), slowpipe::DataError);
  mc.pop_back();
  REQUIRE_THROWS_AS(c->decode(mc, {5, 40}), slowpipe::DataError);
  at::Tensor y = at::randn({5, 40});
  y.data_ptr<float>()[17] = INFINITY;
  REQUIRE_THROWS_AS(c->encode(y), slowpipe::DataError);
}

TEST_CASE("QSGD: the SIMD level loops give the portable loop's bytes; the codec's are unchanged") {
  // Each path against the old per-element formula (stochastic_uniform of the
  // global index), which is what encode_payload computed before the loops
  // moved to internal/qsgd_kernels.h: the wire bytes did not change.
  namespace sq = sc::qsgd;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (int levels : {1, 4, 15, 127}) {
    // Scale 1e-33: S 2^24 / norm beyond the float range (AVX2's product is
    // not finite, every group is recomputed).
    for (const auto& [n, scale] : std::vector<std::pair<int64_t, float>>{{1, 1},
                                                                         {7, 1},
                                                                         {8, 1},
                                                                         {15, 1},
                                                                         {16, 1},
                                                                         {17, 1},
                                                                         {128, 1},
                                                                         {1000, 1},
                                                                         {17, 1e-33F},
                                                                         {1000, 1e-33F}}) {
      std::vector<float> x(n);
      for (float& v : x) v = normal(rng) * scale;
      if (n > 4) {
        x[1] = -0.0F;
        x[2] = 1e-40F;                  // subnormal
        if (scale == 1) x[3] = -3e38F;  // the norm's largest element: level S exactly
      }
      const float norm = sc::qsgd_norm(x.data(), n);
      for (uint64_t index0 : {uint64_t{0}, uint64_t{123456789}, (uint64_t{1} << 32) - 5}) {
        const uint32_t seed = 77U + static_cast<uint32_t>(levels);
        std::vector<uint8_t> want(n);
        for (int64_t i = 0; i < n; ++i) {
          const double t = levels * std::fabs(static_cast<double>(x[i])) / norm;
          int level = static_cast<int>(t + sc::stochastic_uniform(seed, index0 + i));
          level = std::min(level, levels);
          want[i] = static_cast<uint8_t>((level << 1) | (level > 0 && x[i] < 0 ? 1 : 0));
        }
        for (sc::simd::Level isa :
             {sc::simd::Level::kPortable, sc::simd::Level::kAvx2, sc::simd::Level::kAvx512}) {
          INFO("S=" << levels << " n=" << n << " index0=" << index0
                    << " isa=" << static_cast<int>(isa));
          std::vector<uint8_t> got(n, 0xFF);
          sq::bucket_codes(x.data(), n, norm, levels, seed, index0, got.data(), isa);
          REQUIRE(got == want);
          // Every vector group recomputed with the division (the fallback path).
          std::vector<uint8_t> exact(n, 0xFF);
          sq::bucket_codes(x.data(), n, norm, levels, seed, index0, exact.data(), isa, 0.5);
          REQUIRE(exact == want);
        }
      }
    }
  }
  // Bucket sums: eight side by side equal one at a time, bit for bit.
  std::vector<float> x(37 * 19);
  for (float& v : x) v = normal(rng) * 1e3F;
  std::vector<double> sums(19);
  sq::bucket_sums(x.data(), 37, 19, sums.data());
  for (int64_t b = 0; b < 19; ++b) {
    double s = 0;
    for (int64_t j = 0; j < 37; ++j) s += static_cast<double>(x[b * 37 + j]) * x[b * 37 + j];
    REQUIRE(sums[b] == s);
  }
  // Vector partial sums give the element-order sum's stored norm, for every
  // bucket length and path; and where the bound straddles two norms (sqrt 25
  // is exactly 5, a float) the element-order sum decides.
  for (int64_t len : {1, 5, 8, 16, 100, 128, 1000}) {
    std::vector<float> v(len * 50);
    for (float& e : v) e = normal(rng) * (len % 3 == 0 ? 1e-20F : 1.0F);
    for (sc::simd::Level isa :
         {sc::simd::Level::kPortable, sc::simd::Level::kAvx2, sc::simd::Level::kAvx512}) {
      std::vector<double> fast(50);
      sq::bucket_sums_fast(v.data(), len, 50, fast.data(), isa);
      std::vector<float> norms(50);
      sc::norms_from_sums(v.data(), len, 50, fast.data(), norms.data(), isa);
      for (int64_t b = 0; b < 50; ++b) {
        INFO("len=" << len << " bucket " << b << " isa=" << static_cast<int>(isa));
        REQUIRE(norms[b] == sc::qsgd_norm(v.data() + b * len, len));
      }
    }
  }
  const float three_four[] = {3.0F, 4.0F};
  for (double approx : {25.0, std::nextafter(25.0, 0.0), std::nextafter(25.0, 30.0)}) {
    float norm = 0;
    sc::norms_from_sums(three_four, 2, 1, &approx, &norm, sc::simd::Level::kAvx512);
    REQUIRE(norm == 5.0F);
  }
  // The codec: SIMD loops on or off, the same message.
  for (const std::string spec : {"qsgd:s=4", "qsgd:s=7:bucket=100", "qsgd:s=2:bucket=5"}) {
    INFO(spec);
    auto fast = sc::make_codec(spec, 9), slow = sc::make_codec(spec, 9);
    dynamic_cast<sc::Qsgd&>(*slow).set_simd(false);
    const at::Tensor t = at::randn({3, 1001});
    REQUIRE(fast->encode(t) == slow->encode(t));
    REQUIRE(fast->encode(t) == slow->encode(t));  // second encode: the next seed
  }
  if (!sc::simd::available()) WARN("no AVX-512 here (or SLOWPIPE_SIMD caps it): not all paths ran");
}

TEST_CASE("QSGD: a block's norms and codes equal one bucket's at a time, on every path") {
  namespace sq = sc::qsgd;
  const sc::simd::Level isas[] = {sc::simd::Level::kPortable, sc::simd::Level::kAvx2,
                                  sc::simd::Level::kAvx512};
  // Rounded-up norms: exact squares, values just off them, the subnormal
  // range, the saturation at FLT_MAX, zero; every count (vector groups and
  // tails), every scale the encoder uses.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> exponent(-320, 310);
  std::vector<double> sums = {0.0,
                              25.0,
                              std::nextafter(25.0, 0.0),
                              std::nextafter(25.0, 30.0),
                              1e-90,
                              4e-91,
                              1.7e-308,
                              1.2e77,
                              1.16e77,
                              3.4e76,
                              1e300};
  while (sums.size() < 203) sums.push_back(std::pow(10.0, exponent(rng)));
  for (double scale : {1.0, 1 - 136 * 0x1p-51, 1 + 136 * 0x1p-51}) {
    for (int64_t count : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{8}, int64_t{203}}) {
      for (sc::simd::Level isa : isas) {
        std::vector<float> got(count, -1.0F);
        sq::norms_up(sums.data(), count, scale, got.data(), isa);
        for (int64_t b = 0; b < count; ++b) {
          INFO("sum " << sums[b] << " scale " << scale << " isa " << static_cast<int>(isa));
          const float want = sq::norm_up(sums[b] * scale);
          REQUIRE(std::memcmp(&got[b], &want, 4) == 0);
        }
      }
    }
  }
  REQUIRE(sq::norm_up(25.0) == 5.0F);
  REQUIRE(sq::norm_up(1e300) == FLT_MAX);
  REQUIRE(static_cast<double>(sq::norm_up(2.0)) > std::sqrt(2.0));
  REQUIRE(static_cast<double>(std::nextafter(sq::norm_up(2.0), 0.0F)) < std::sqrt(2.0));
  // Codes: a block equals its buckets one at a time, with zero norms and a
  // block that crosses a 2^32-element run (a new hash key) inside a bucket.
  std::normal_distribution<float> normal;
  for (int64_t d : {int64_t{16}, int64_t{100}, int64_t{128}}) {
    const int64_t count = 70;  // more than one call of the vector loops
    std::vector<float> x(count * d);
    for (float& v : x) v = normal(rng);
    std::vector<float> norms(count);
    for (int64_t b = 0; b < count; ++b) norms[b] = sc::qsgd_norm(x.data() + b * d, d);
    norms[5] = 0.0F;
    norms[count - 1] = 0.0F;
    for (uint64_t index0 : {uint64_t{0}, (uint64_t{1} << 32) - 7 * d - 3}) {
      for (sc::simd::Level isa : isas) {
        INFO("d=" << d << " index0=" << index0 << " isa=" << static_cast<int>(isa));
        std::vector<uint8_t> want(count * d, 0), got(count * d, 0xFF);
        for (int64_t b = 0; b < count; ++b)
          if (norms[b] > 0)
            sq::bucket_codes(x.data() + b * d, d, norms[b], 4, 21, index0 + b * d,
                             want.data() + b * d, sc::simd::Level::kPortable);
        sq::block_codes(x.data(), d, count, norms.data(), 4, 21, index0, got.data(), isa);
        REQUIRE(got == want);
      }
    }
  }
}

TEST_CASE("QSGD: 4-bit codes decode in place as unpacked, on every path; bad levels named") {
  namespace sq = sc::qsgd;
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  const float value8[8] = {0.0F, 0.25F, 0.5F, 0.75F, 1.0F, 1e-40F, 3e38F, 7.0F};
  for (int64_t n : {1, 2, 7, 15, 16, 17, 31, 32, 33, 128, 1001}) {
    std::vector<uint8_t> packed((n + 1) / 2);
    for (uint8_t& p : packed) p = static_cast<uint8_t>(byte(rng));
    packed[0] = 0x10;  // code 0 then code 1: level 0 with the sign bit, -0.0
    std::vector<uint8_t> codes(n);
    sc::unpack_codes(packed.data(), n, 4, codes.data());
    std::vector<float> want(n);
    int want_top = 0;
    for (int64_t i = 0; i < n; ++i) {
      want[i] = (codes[i] & 1) ? -value8[codes[i] >> 1] : value8[codes[i] >> 1];
      want_top = std::max<int>(want_top, codes[i]);
    }
    for (sc::simd::Level isa :
         {sc::simd::Level::kPortable, sc::simd::Level::kAvx2, sc::simd::Level::kAvx512}) {
      INFO("n=" << n << " isa=" << static_cast<int>(isa));
      std::vector<float> got(n, 9.0F);
      REQUIRE(sq::decode_codes4(packed.data(), n, value8, got.data(), isa) == want_top);
      REQUIRE(std::memcmp(got.data(), want.data(), 4 * n) == 0);  // -0.0 included
      std::vector<float> from_bytes(n, 9.0F);                     // the same codes, one per byte
      REQUIRE(sq::decode_codes(codes.data(), n, value8, from_bytes.data(), isa) == want_top);
      REQUIRE(std::memcmp(from_bytes.data(), want.data(), 4 * n) == 0);
    }
  }
  // The codec: in place (4-bit codes, even buckets) and unpacked (odd
  // buckets, 3-bit codes) against the portable decoder, bit for bit.
  for (const std::string spec :
       {"qsgd:s=4", "qsgd:s=7:bucket=100", "qsgd:s=5:bucket=5", "qsgd:s=3", "qsgd:s=15"}) {
    INFO(spec);
    auto fast = sc::make_codec(spec, 9), slow = sc::make_codec(spec, 9);
    dynamic_cast<sc::Qsgd&>(*slow).set_simd(false);
    const at::Tensor t = at::randn({3, 1001});
    const sc::Message m = fast->encode(t);
    const at::Tensor a = fast->decode(m, {3, 1001}), b = slow->decode(m, {3, 1001});
    REQUIRE(std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(), 4 * 3003) == 0);
  }
  // Unpacked first (buckets of 5): a level above S named as well.
  auto odd = sc::make_codec("qsgd:s=5:bucket=5", 4);
  const at::Tensor z = at::randn({2, 20});  // buckets of 5: 8; 4-bit codes after 32 B of norms
  sc::Message mo = odd->encode(z);
  mo[4 * 8 + 13 / 2] = static_cast<uint8_t>(mo[4 * 8 + 13 / 2] | (0x0C << (4 * (13 % 2))));
  REQUIRE_THROWS_WITH(odd->decode(mo, {2, 20}), Catch::Contains("above s at element 13"));
  // A level above S in the packed codes: the message is refused, naming the
  // element, in the first and in a later bucket.
  auto c = sc::make_codec("qsgd:s=4", 4);
  const at::Tensor x = at::randn({2, 300});  // buckets of 128: 5
  for (int64_t element : {int64_t{0}, int64_t{1}, int64_t{300}, int64_t{599}}) {
    sc::Message m = c->encode(x);
    uint8_t& byte_of = m[4 * 5 + element / 2];
    byte_of = static_cast<uint8_t>(byte_of | (0x0C << (4 * (element % 2))));  // level >= 6
    REQUIRE_THROWS_WITH(c->decode(m, {2, 300}),
                        Catch::Contains("above s at element " + std::to_string(element)));
  }
}
