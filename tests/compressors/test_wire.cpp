// Exact message sizes against the documented formulas (docs/codec-spec.md),
// wire_bytes() against real encoded sizes, and robustness of decoding against
// truncated and corrupted messages.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <random>

#include "common/errors.h"
#include "compressors/codecs/codec.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/index_coding.h"
#include "compressors/codecs/topk_select.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {
uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}
int ceil_log2(int64_t m) {
  int b = 1;
  while ((int64_t{1} << b) < m) ++b;
  return b;
}
// Index bits of one row (docs/codec-spec.md): the smallest of a bitmap (m), a
// list (k ceil(log2 m)) and Elias-Fano (k l + k + floor(m / 2^l), l = floor(log2(m / k))).
uint64_t index_row_bits(uint64_t m, uint64_t k) {
  if (k == 0) return 0;
  int l = 0;
  while ((k << (l + 1)) <= m) ++l;
  const uint64_t elias_fano = k * l + k + (m >> l);
  return std::min({m, k * ceil_log2(static_cast<int64_t>(m)), elias_fano});
}
// The documented size formulas, written out independently of the codecs.
uint64_t formula(const std::string& spec, const sc::Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= d;
  const uint64_t B = s.size() < 2 ? 1 : s[0], C = s.back();
  if (spec == "none") return 4 * n;
  if (spec == "fp16" || spec == "bf16") return 2 * n;
  if (spec == "sign") return 4 * B + ceil_div(n, 8);
  if (spec == "q4") return 2 * C + ceil_div(4 * n, 8);
  if (spec == "q2:stochastic") return 2 * C + ceil_div(2 * n, 8);
  if (spec == "q3:row:minmax") return 4 * B + ceil_div(3 * n, 8);
  if (spec == "q8:tensor:fp32") return 4 + n;
  if (spec == "q4:group=64") return 2 * ceil_div(n, 64) + ceil_div(4 * n, 8);
  if (spec == "q1:group=7:minmax:fp32") return 8 * ceil_div(n, 7) + ceil_div(n, 8);
  auto sparse = [&](double frac, uint64_t value_bytes_per_row_k, uint64_t per_row_extra,
                    bool tensor) {
    uint64_t rows = tensor ? 1 : B, m = n / rows;
    auto k = static_cast<uint64_t>(sc::kept_count(frac, static_cast<int64_t>(m)));
    return ceil_div(rows * index_row_bits(m, k), 8) + rows * (k * value_bytes_per_row_k) +
           per_row_extra * rows;
  };
  if (spec == "topk:0.1") return sparse(0.1, 4, 0, false);
  if (spec == "topk:0.3:tensor") return sparse(0.3, 4, 0, true);
  if (spec == "randk:0.2") return sparse(0.2, 4, 0, false);
  if (spec == "topk:0.1+fp16") return sparse(0.1, 2, 0, false);
  if (spec == "topk:0.1+q8") {  // values [B, k]: one fp16 scale per row + k bytes
    uint64_t m = n / B, k = static_cast<uint64_t>(sc::kept_count(0.1, static_cast<int64_t>(m)));
    return ceil_div(B * index_row_bits(m, k), 8) + 2 * B + ceil_div(8 * B * k, 8);
  }
  // colk: the kept columns' indices once (one row of length C), then [n / C, k] values.
  if (spec == "colk:0.25" || spec == "colk:0.1+q8") {
    const bool q8 = spec == "colk:0.1+q8";
    const uint64_t rows = n / C, k = static_cast<uint64_t>(
                                     sc::kept_count(q8 ? 0.1 : 0.25, static_cast<int64_t>(C)));
    return ceil_div(index_row_bits(C, k), 8) + (q8 ? 2 * rows + rows * k : 4 * rows * k);
  }
  if (spec == "topk:0.05+q4") {
    uint64_t m = n / B, k = static_cast<uint64_t>(sc::kept_count(0.05, static_cast<int64_t>(m)));
    return ceil_div(B * index_row_bits(m, k), 8) + 2 * B + ceil_div(4 * B * k, 8);
  }
  // TAH-Quant (tiles along C): G = 64, every tile 3 bits (a whole budget: no
  // width map), 4 bytes per tile, 1 + 6 rotation bits per full tile.
  if (spec == "tah:bits=3") {
    const uint64_t tokens = n / C, full = tokens * (C / 64), tail = C % 64 ? tokens : 0;
    return 4 * (full + tail) + ceil_div(7 * full, 8) + ceil_div(3 * n, 8);
  }
  // 1 + 3 rotation bits per full tile, every tile 2 bits.
  if (spec == "tah:bits=2:tile=8:fixed") {
    const uint64_t tokens = n / C, full = tokens * (C / 8), tail = C % 8 ? tokens : 0;
    return 4 * (full + tail) + ceil_div(4 * full, 8) + ceil_div(2 * n, 8);
  }
  // Widths 3 and 4, half of each class at 4 bits; a width bit per tile, 1 + 4 per full tile.
  if (spec == "tah:bits=3.5:tile=16") {
    const uint64_t tokens = n / C, full = tokens * (C / 16), r = C % 16, tail = r ? tokens : 0;
    return 4 * (full + tail) + ceil_div(full + tail + 5 * full, 8) +
           ceil_div(16 * (3 * full + full / 2) + r * (3 * tail + tail / 2), 8);
  }
  FAIL("no formula for " << spec);
  return 0;
}
const std::vector<std::string> kSpecs = {"none",
                                         "fp16",
                                         "bf16",
                                         "sign",
                                         "q4",
                                         "q2:stochastic",
                                         "q3:row:minmax",
                                         "q8:tensor:fp32",
                                         "q4:group=64",
                                         "q1:group=7:minmax:fp32",
                                         "topk:0.1",
                                         "topk:0.3:tensor",
                                         "randk:0.2",
                                         "topk:0.1+fp16",
                                         "topk:0.1+q8",
                                         "topk:0.05+q4",
                                         "colk:0.25",
                                         "colk:0.1+q8",
                                         "tah:bits=3",
                                         "tah:bits=2:tile=8:fixed",
                                         "tah:bits=3.5:tile=16"};
const std::vector<sc::Shape> kShapes = {{1, 1},      {3, 5},    {2, 7, 13},
                                        {4, 16, 48}, {8, 1000}, {2, 3, 4, 5}};
}  // namespace

TEST_CASE("Wire size: every codec's message has exactly the documented size") {
  for (const std::string& spec : kSpecs)
    for (const sc::Shape& shape : kShapes) {
      INFO(spec << " shape dims " << shape.size() << " numel " << sc::shape_numel(shape));
      at::Tensor x = at::randn(shape);
      auto codec = sc::make_codec(spec, 1);
      sc::Message msg = codec->encode(x);
      REQUIRE(msg.size() == formula(spec, shape));
      REQUIRE(sc::wire_bytes(parsed(spec), shape) == msg.size());
    }
}

TEST_CASE("Wire size: the documented GPT-2 XL examples, byte for byte") {
  // docs/codec-spec.md, "Wire format and exact sizes": an activation [B, 1024,
  // 1600]; TopK at K = 10% keeps k = 163,840 of m = 1,638,400 per sample, its
  // indices in Elias-Fano (l = 3): 3k + k + m/8 = 860,160 bits per row.
  const sc::Shape xl8 = {8, 1024, 1600}, xl1 = {1, 1024, 1600};
  REQUIRE(sc::wire_bytes(parsed("none"), xl8) == 52428800);
  REQUIRE(sc::wire_bytes(parsed("q4"), xl8) == 6556800);
  REQUIRE(sc::wire_bytes(parsed("q2"), xl8) == 3280000);
  REQUIRE(sc::wire_bytes(parsed("topk:0.1"), xl8) == 6103040);     // 860,160 + 8 * 163,840 * 4
  REQUIRE(sc::wire_bytes(parsed("topk:0.1+q8"), xl8) == 2170896);  // 860,160 + 8 * (2 + 163,840)
  REQUIRE(sc::wire_bytes(parsed("topk:0.1+q8"), xl1) == 271362);   // 107,520 + 2 + 163,840
  REQUIRE(sc::wire_bytes(parsed("topk:0.3+q8"), xl1) == 696322);   // bitmap: 204,800 + 2 + 491,520
  REQUIRE(sc::wire_bytes(parsed("topk:0.01+q8"), xl1) == 17536 + 2 + 16384);  // Elias-Fano, l = 6
  REQUIRE(sc::wire_bytes(parsed("topk:0.1"), parsed("topk:shared+q8"), xl1) ==
          2 + 163840);  // values only
  for (const sc::Shape& s : {xl1, xl8}) {
    const double ratio = 4.0 * static_cast<double>(sc::shape_numel(s)) /
                         static_cast<double>(sc::wire_bytes(parsed("topk:0.1+q8"), s));
    REQUIRE(ratio > 24.1);
    REQUIRE(ratio < 24.2);
  }
}

TEST_CASE("Encoding: a reused message buffer holding other bytes encodes like a fresh one") {
  for (const std::string& spec : kSpecs)
    for (const sc::Shape& shape : kShapes) {
      INFO(spec << " shape dims " << shape.size() << " numel " << sc::shape_numel(shape));
      at::Tensor x = at::randn(shape);
      sc::Message fresh = sc::make_codec(spec, 1)->encode(x);
      for (size_t prefill : {fresh.size(), fresh.size() + 17}) {
        sc::Message reused(prefill, 0xA5);
        sc::make_codec(spec, 1)->encode_raw(x.data_ptr<float>(), shape, reused);
        REQUIRE(reused == fresh);
      }
    }
}

TEST_CASE("Wire size: wire_bytes equals the bytes a channel really sends, schemes included") {
  sc::ChannelContext ctx;
  ctx.num_samples = 64;
  ctx.warmup_epochs = 1;
  for (const std::string& codec_spec : kSpecs)
    for (const std::string scheme : {"", "ef", "ef21", "aq"}) {
      std::string spec = scheme.empty() ? codec_spec : std::string(scheme) + "(" + codec_spec + ")";
      sc::Shape shape = {4, 6, 40};
      auto channel = sc::make_channel(parsed(spec), ctx);
      at::Tensor ids = at::arange(4, at::kLong);
      for (int epoch = 0; epoch < 2; ++epoch) {  // AQ: warm-up, then steady state
        channel->set_epoch(epoch);
        sc::TransferStats stats;
        channel->transfer(at::randn(shape), ids, &stats);
        INFO(spec << " epoch " << epoch);
        if (scheme == std::string("aq") && epoch == 0)
          REQUIRE(stats.bytes == 4 * 4 * 6 * 40);
        else
          REQUIRE(stats.bytes == sc::wire_bytes(parsed(spec), shape));
      }
    }
}

TEST_CASE("Wire size: the backward channel with the shared forward mask sends values only") {
  sc::Shape shape = {4, 8, 50};
  for (const std::string bw : {"topk:shared", "topk:shared+q8"}) {
    sc::Boundary b = sc::make_boundary(parsed("topk:0.1"), parsed(bw), sc::ChannelContext{});
    at::Tensor ids = at::arange(10, 14, at::kLong);
    sc::TransferStats fw, bwst;
    b.fw->transfer(at::randn(shape), ids, &fw);
    b.bw->transfer(at::randn(shape), ids, &bwst);
    REQUIRE(bwst.bytes == sc::wire_bytes(parsed("topk:0.1"), parsed(bw), shape));
    const uint64_t k = 40;  // ceil(0.1 * 400)
    REQUIRE(bwst.bytes == (bw == std::string("topk:shared") ? 4 * 4 * k : 4 * (2 + k)));
  }
  REQUIRE_THROWS_AS(sc::wire_bytes(parsed("topk:shared"), shape), slowpipe::UsageError);
}

TEST_CASE("Decoding: truncated or corrupted messages give DataError, never a crash") {
  sc::Shape shape = {3, 4, 33};
  std::mt19937 rng(99);
  for (const std::string& spec : kSpecs) {
    INFO(spec);
    auto codec = sc::make_codec(spec, 2);
    at::Tensor x = at::randn(shape);
    sc::Message msg = codec->encode(x);
    // Every truncation and one extra byte.
    for (size_t len = 0; len < msg.size(); len += std::max<size_t>(1, msg.size() / 37)) {
      sc::Message cut(msg.begin(), msg.begin() + static_cast<std::ptrdiff_t>(len));
      REQUIRE_THROWS_AS(codec->decode(cut, shape), slowpipe::DataError);
    }
    sc::Message longer = msg;
    longer.push_back(0);
    REQUIRE_THROWS_AS(codec->decode(longer, shape), slowpipe::DataError);
    // Random corruption: decodes to some tensor of the right shape, or DataError.
    for (int trial = 0; trial < 300; ++trial) {
      sc::Message bad = msg;
      int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f)
        bad[rng() % bad.size()] ^= static_cast<uint8_t>(1U << (rng() % 8));
      try {
        at::Tensor y = codec->decode(bad, shape);
        REQUIRE(y.sizes() == x.sizes());
      } catch (const slowpipe::DataError&) {
      }
    }
  }
  // Targeted corruptions that must be caught.
  auto q = sc::make_codec("q4");
  sc::Message m = q->encode(at::randn(shape));
  sc::Message nan_scale = m;
  nan_scale[0] = 0xFF;
  nan_scale[1] = 0x7F;  // fp16 NaN
  REQUIRE_THROWS_AS(q->decode(nan_scale, shape), slowpipe::DataError);
  // Rows of m = 132. topk:0.01 keeps k = 2: a list of 8-bit indices (16 bits,
  // as Elias-Fano with l = 6: 12 + 2 + 2; the tie goes to the list).
  auto t = sc::make_codec("topk:0.01");
  m = t->encode(at::randn(shape));
  sc::Message bad_index = m;
  bad_index[0] = 0xFF;  // index 255 >= 132
  REQUIRE_THROWS_AS(t->decode(bad_index, shape), slowpipe::DataError);
  sc::Message unsorted = m;
  std::swap(unsorted[0], unsorted[1]);
  if (unsorted != m) REQUIRE_THROWS_AS(t->decode(unsorted, shape), slowpipe::DataError);
  // topk:0.1 keeps k = 14: Elias-Fano with l = 3, rows of 42 low bits then 30
  // high bits (bits 42 ... 71 in row 0, inside bytes 5 ... 8).
  auto ef = sc::make_codec("topk:0.1");
  m = ef->encode(at::randn(shape));
  for (uint8_t fill : {0x00, 0xFF}) {  // no set bit (k missing), 30 set bits (16 too many)
    sc::Message high = m;
    std::fill(high.begin() + 5, high.begin() + 9, fill);
    REQUIRE_THROWS_AS(ef->decode(high, shape), slowpipe::DataError);
  }
  // topk:0.3 keeps k = 40: a bitmap (132 bits; a list 320, Elias-Fano 146).
  auto bitmap = sc::make_codec("topk:0.3");
  m = bitmap->encode(at::randn(shape));
  sc::Message extra_bit = m;
  extra_bit[0] ^= 0x01;  // one index more or one fewer in row 0
  REQUIRE_THROWS_AS(bitmap->decode(extra_bit, shape), slowpipe::DataError);
}

TEST_CASE("Empty tensors: every codec encodes and decodes zero elements (fuzz regression)") {
  // fuzz_codec_decode found `none` passing null buffers to memcpy (undefined
  // behaviour under UBSan) for a zero-element tensor.
  for (const std::string spec :
       {"none", "fp16", "bf16", "q4", "q2:minmax:row", "q8:group=3:fp32", "sign", "topk:0.1",
        "randk:0.5+q4", "topk:0.3+fp16", "tah:bits=3", "colk:0.25", "colk:0.1+q8"})
    for (const sc::Shape& shape : {sc::Shape{0}, sc::Shape{0, 4}, sc::Shape{3, 0}}) {
      INFO(spec);
      auto codec = sc::make_codec(spec);
      sc::Message msg;
      codec->encode_raw(nullptr, shape, msg);
      REQUIRE(msg.size() == codec->message_bytes(shape));
      codec->decode_raw(msg.data(), msg.size(), shape, nullptr);
    }
}
