// `colk:F[+VALUES]` (compressors/codecs/internal/colk.h): kept columns,
// decoded tensors and exact message sizes against the naive reference
// (colk_reference.h) on random shapes and fractions, ties and zero columns;
// the lossless F = 1; `+q8` values; refusals (non-finite input, bad specs,
// malformed messages, the gradient role, a topk:shared backward); wire sizes
// and channels built from fw and bw specs.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/codec.h"
#include "compressors/codecs/index_coding.h"
#include "compressors/codecs/topk_select.h"
#include "tests/common/parsed_spec.h"
#include "tests/compressors/colk_reference.h"

namespace sc = slowpipe::compressors;
namespace naive = slowpipe::compressors::naive;

using slowpipe::test::parsed;

namespace {

// Rows and channels of a shape as colk sees it: m = last dimension.
void rows_and_m(const sc::Shape& shape, int64_t* rows, int64_t* m) {
  *m = shape.empty() ? 1 : shape.back();
  *rows = *m == 0 ? 0 : sc::shape_numel(shape) / *m;
}

// The kept columns a message carries: its first section, one row of length m.
std::vector<int32_t> kept_of(const sc::Message& msg, int64_t m, int64_t k) {
  std::vector<int32_t> idx(static_cast<size_t>(k));
  sc::decode_indices(msg.data(), /*rows=*/1, m, k, idx.data());
  return idx;
}

// Random data with structure: some zero columns, some columns copied from
// another (equal scores: ties), some small integers (more ties).
std::vector<float> structured(int64_t rows, int64_t m, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(rows * m));
  for (float& v : x) v = normal(rng);
  const int kind = static_cast<int>(rng() % 4);
  for (int64_t j = 0; j < m; ++j) {
    const uint32_t roll = rng() % 8;
    const int64_t source = j > 0 ? static_cast<int64_t>(rng() % j) : 0;
    for (int64_t r = 0; r < rows; ++r) {
      float& v = x[r * m + j];
      if (kind == 0) v = static_cast<float>(rng() % 3) - 1.0F;  // -1, 0, 1: many ties
      if (roll == 0) v = 0.0F;                                  // a zero column
      if (roll == 1 && j > 0) v = -x[r * m + source];           // a (negated) copy: a tie
    }
  }
  return x;
}

}  // namespace

TEST_CASE("ColK: kept columns, decoded tensor and bytes equal the naive reference") {
  std::mt19937 rng(35);
  std::vector<sc::Shape> shapes = {{1, 1},     {1},         {7},       {1, 1, 1},   {3, 5},
                                   {2, 7, 13}, {4, 16, 48}, {8, 1000}, {1, 3, 200}, {5, 1}};
  for (int i = 0; i < 40; ++i) {  // random [B, T, C], [N, C] and 1-d
    const int64_t c = 1 + static_cast<int64_t>(rng() % 90);
    const auto upto = [&rng](int64_t n) { return 1 + static_cast<int64_t>(rng() % n); };
    if (i % 3 == 0) shapes.push_back({upto(4), upto(20), c});
    if (i % 3 == 1) shapes.push_back({upto(40), c});
    if (i % 3 == 2) shapes.push_back({c});
  }
  std::vector<double> fractions = {1e-6, 0.01, 0.1, 0.25, 0.5, 0.77, 1.0};
  for (int i = 0; i < 5; ++i)
    fractions.push_back(std::uniform_real_distribution<double>(0.01, 1)(rng));
  int checked = 0, ties_broken = 0;
  for (const sc::Shape& shape : shapes)
    for (double f : fractions) {
      int64_t rows, m;
      rows_and_m(shape, &rows, &m);
      const std::string text = "colk:" + std::to_string(f);  // 6 decimals
      const int64_t k = sc::kept_count(std::stod(text.substr(5)), m);
      const std::vector<float> x = structured(rows, m, rng);
      auto codec = sc::make_codec(text);
      const std::string spec = codec->spec();
      INFO(spec << " rows " << rows << " m " << m << " k " << k);
      sc::Message msg(3, 0xAB);  // a reused buffer holding other bytes
      codec->encode_raw(x.data(), shape, msg);
      // Exact size: the formula, payload_bytes and wire_bytes agree.
      REQUIRE(msg.size() == naive::colk_bytes(m, k, 4 * rows * k));
      REQUIRE(codec->payload_bytes(shape) == msg.size());
      REQUIRE(sc::wire_bytes(parsed(spec), shape) == msg.size());
      const std::vector<int32_t> want = naive::colk_kept(x, rows, m, k);
      REQUIRE(kept_of(msg, m, k) == want);
      std::vector<float> y(x.size(), -7.0F);
      codec->decode_raw(msg.data(), msg.size(), shape, y.data());
      REQUIRE(y == naive::colk_decoded(x, rows, m, want));
      // Did a tie at the threshold decide? (a column left out that scores as
      // the last kept one): the data must exercise the tie rule.
      std::vector<double> score(static_cast<size_t>(m), 0.0);
      for (int64_t j = 0; j < m; ++j)
        for (int64_t r = 0; r < rows; ++r) score[j] += double(x[r * m + j]) * x[r * m + j];
      double lowest = INFINITY;
      for (int32_t j : want) lowest = std::min(lowest, score[j]);
      for (int64_t j = 0; j < m; ++j)
        if (score[j] == lowest && !std::binary_search(want.begin(), want.end(), j)) {
          ++ties_broken;
          break;
        }
      ++checked;
    }
  CHECK(checked == static_cast<int>(shapes.size() * fractions.size()));
  CHECK(ties_broken > 20);
}

TEST_CASE("ColK: F = 1 is lossless, a tiny F keeps the one strongest column") {
  std::mt19937 rng(7);
  for (const sc::Shape& shape : {sc::Shape{2, 9, 33}, sc::Shape{17, 5}, sc::Shape{40}}) {
    int64_t rows, m;
    rows_and_m(shape, &rows, &m);
    const std::vector<float> x = structured(rows, m, rng);
    auto all = sc::make_codec("colk:1");
    sc::Message msg;
    all->encode_raw(x.data(), shape, msg);
    std::vector<float> y(x.size());
    all->decode_raw(msg.data(), msg.size(), shape, y.data());
    REQUIRE(std::memcmp(y.data(), x.data(), x.size() * sizeof(float)) == 0);
    REQUIRE(msg.size() == (naive::colk_index_bits(m, m) + 7) / 8 + 4 * x.size());
    auto one = sc::make_codec("colk:0.000001");
    one->encode_raw(x.data(), shape, msg);
    REQUIRE(msg.size() == naive::colk_bytes(m, 1, 4 * rows));
    REQUIRE(kept_of(msg, m, 1) == naive::colk_kept(x, rows, m, 1));
  }
}

TEST_CASE("ColK: the score is the l2 norm over tokens; ties go to the lower column") {
  const auto kept = [](const std::string& spec, const std::vector<float>& x, const sc::Shape& s) {
    auto codec = sc::make_codec(spec);
    sc::Message msg;
    codec->encode_raw(x.data(), s, msg);
    const int64_t m = s.back();
    return kept_of(msg, m, sc::kept_count(std::stod(spec.substr(5)), m));
  };
  // Columns [rows 4, m 2]: a = (3, 0, 0, 0) has sum of squares 9 and sum of
  // |x| 3; b = (1, 1, 1, 1) has 4 and 4. The l2 rule keeps a; control: an l1
  // rule, or per-element TopK over all tokens, would not keep a alone.
  const std::vector<float> ab = {3, 1, 0, 1, 0, 1, 0, 1};
  CHECK(kept("colk:0.5", ab, {4, 2}) == std::vector<int32_t>{0});
  CHECK(kept("colk:0.5", {1, 3, 1, 0, 1, 0, 1, 0}, {4, 2}) == std::vector<int32_t>{1});
  // Column scores (1, 4, 4, 1, 0): ties to the lower index.
  const std::vector<float> tied = {1, 2, -2, 1, 0};
  CHECK(kept("colk:0.2", tied, {1, 5}) == std::vector<int32_t>{1});
  CHECK(kept("colk:0.4", tied, {1, 5}) == std::vector<int32_t>{1, 2});
  CHECK(kept("colk:0.6", tied, {1, 5}) == std::vector<int32_t>{0, 1, 2});
  CHECK(kept("colk:0.8", tied, {1, 5}) == std::vector<int32_t>{0, 1, 2, 3});
  // All zero: every score ties, the first k columns; the zero column last.
  CHECK(kept("colk:0.5", std::vector<float>(12, 0.0F), {3, 4}) == std::vector<int32_t>{0, 1});
  CHECK(kept("colk:0.8", {5, 5, 5, 5, 0}, {1, 5}) == std::vector<int32_t>{0, 1, 2, 3});
  // docs/codec-spec.md's example, GPT-2 XL [8, 1024, 1600]: Elias-Fano, l = 3.
  CHECK(sc::make_codec("colk:0.1")->payload_bytes({8, 1024, 1600}) == 105 + 4 * 8192 * 160);
  CHECK(sc::make_codec("colk:0.1+q8")->payload_bytes({8, 1024, 1600}) == 105 + 8192 * 162);
  // The indices are sent once: doubling the tokens adds values, not indices.
  auto codec = sc::make_codec("colk:0.25");
  CHECK(codec->payload_bytes({2, 64, 64}) - codec->payload_bytes({1, 64, 64}) == 4 * 64 * 16);
}

TEST_CASE("ColK: +q8 encodes the kept [rows, k] values like topk's value stage") {
  std::mt19937 rng(11);
  for (const sc::Shape& shape : {sc::Shape{2, 8, 40}, sc::Shape{30, 12}, sc::Shape{100}}) {
    int64_t rows, m;
    rows_and_m(shape, &rows, &m);
    const int64_t k = sc::kept_count(0.1, m);
    const std::vector<float> x = structured(rows, m, rng);
    auto codec = sc::make_codec("colk:0.1+q8");
    CHECK(codec->spec() == "colk:0.1+q8");
    sc::Message msg;
    codec->encode_raw(x.data(), shape, msg);
    // Values: one fp16 scale per row of [rows, k], then one byte per value.
    REQUIRE(msg.size() == naive::colk_bytes(m, k, 2 * rows + rows * k));
    REQUIRE(sc::wire_bytes(parsed("colk:0.1+q8"), shape) == msg.size());
    const std::vector<int32_t> want = naive::colk_kept(x, rows, m, k);
    REQUIRE(kept_of(msg, m, k) == want);
    // The kept values through topk:1+q8 (every element of [rows, k] kept, the
    // same value codec by another path) must decode to the same numbers.
    std::vector<float> gathered;
    for (int64_t r = 0; r < rows; ++r)
      for (int32_t j : want) gathered.push_back(x[r * m + j]);
    auto values = sc::make_codec("topk:1+q8");
    sc::Message vmsg;
    values->encode_raw(gathered.data(), {rows, k}, vmsg);
    std::vector<float> vdec(gathered.size()), y(x.size());
    values->decode_raw(vmsg.data(), vmsg.size(), {rows, k}, vdec.data());
    codec->decode_raw(msg.data(), msg.size(), shape, y.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0, kj = 0; j < m; ++j) {
        const bool kept = kj < k && want[kj] == j;
        REQUIRE(y[r * m + j] == (kept ? vdec[r * k + kj] : 0.0F));
        kj += kept;
      }
  }
}

TEST_CASE("ColK: non-finite input, bad specs and malformed messages are refused") {
  // Non-finite anywhere, in a column that would be kept or dropped.
  for (float bad : {NAN, INFINITY, -INFINITY})
    for (size_t at : {size_t{0}, size_t{5}}) {
      std::vector<float> x = {9, 9, 0, 9, 9, 0};  // [2, 3]: column 2 would be dropped
      x[at] = bad;
      auto codec = sc::make_codec("colk:0.5");
      sc::Message msg;
      REQUIRE_THROWS_AS(codec->encode_raw(x.data(), {2, 3}, msg), slowpipe::DataError);
    }
  for (const char* spec :
       {"colk", "colk:0", "colk:1.5", "colk:-0.1", "colk:abc", "colk:nan", "colk:0.1:row",
        "colk:f=0.1", "q4+colk:0.1", "colk:0.1+topk:0.1", "colk:0.1+q8:channel", "colk:2+q8"}) {
    INFO(spec);
    REQUIRE_THROWS_AS(sc::make_codec(spec), slowpipe::UsageError);
  }
  try {
    sc::make_codec("colk:1.5");
  } catch (const slowpipe::UsageError& e) {
    CHECK(std::string(e.what()) ==
          "bad spec 'colk:1.5' at position 6: expected F, the fraction of columns kept, in "
          "(0, 1], got '1.5'");
  }
  // Messages: truncated, one byte longer, bad indices, random corruption.
  const sc::Shape shape = {3, 4, 33};
  std::mt19937 rng(3);
  for (const char* spec : {"colk:0.03", "colk:0.1", "colk:0.4", "colk:0.25+q8"}) {
    INFO(spec);
    auto codec = sc::make_codec(spec);
    const std::vector<float> x = structured(12, 33, rng);
    sc::Message msg;
    codec->encode_raw(x.data(), shape, msg);
    std::vector<float> y(x.size());
    for (size_t len = 0; len < msg.size(); ++len)
      REQUIRE_THROWS_AS(codec->decode_raw(msg.data(), len, shape, y.data()), slowpipe::DataError);
    sc::Message longer = msg;
    longer.push_back(0);
    REQUIRE_THROWS_AS(codec->decode_raw(longer.data(), longer.size(), shape, y.data()),
                      slowpipe::DataError);
    for (int trial = 0; trial < 300; ++trial) {
      sc::Message bad = msg;
      bad[rng() % bad.size()] ^= static_cast<uint8_t>(1U << (rng() % 8));
      try {
        codec->decode_raw(bad.data(), bad.size(), shape, y.data());
      } catch (const slowpipe::DataError&) {
      }
    }
  }
  // m = 33, k = 1: a list of one 6-bit index; 63 >= 33 is refused.
  auto one = sc::make_codec("colk:0.03");
  sc::Message msg;
  const std::vector<float> x(3 * 4 * 33, 1.0F);
  one->encode_raw(x.data(), shape, msg);
  std::vector<float> y(x.size());
  msg[0] |= 0x3F;
  REQUIRE_THROWS_AS(one->decode_raw(msg.data(), msg.size(), shape, y.data()), slowpipe::DataError);
  // m = 33, k = 14 (colk:0.4): a bitmap of 33 bits; one bit more is refused.
  auto bitmap = sc::make_codec("colk:0.4");
  bitmap->encode_raw(x.data(), shape, msg);
  REQUIRE(kept_of(msg, 33, 14).front() == 0);
  msg[4] |= 0x01;  // bit 32: column 32, not kept (the ties kept 0..13)
  REQUIRE_THROWS_AS(bitmap->decode_raw(msg.data(), msg.size(), shape, y.data()),
                    slowpipe::DataError);
}

TEST_CASE("ColK: empty tensors cost nothing") {
  for (const sc::Shape& shape :
       {sc::Shape{0}, sc::Shape{0, 4}, sc::Shape{3, 0}, sc::Shape{2, 0, 5}})
    for (const char* spec : {"colk:0.5", "colk:0.1+q8"}) {
      INFO(spec);
      auto codec = sc::make_codec(spec);
      sc::Message msg;
      codec->encode_raw(nullptr, shape, msg);
      REQUIRE(msg.empty());
      codec->decode_raw(msg.data(), msg.size(), shape, nullptr);
    }
}

TEST_CASE("ColK: registry entry, roles and channels") {
  const sc::CodecInfo* info = sc::codec_registry().find("colk");
  REQUIRE(info);
  CHECK_FALSE(info->value_codec);
  CHECK(info->with_values);
  CHECK(sc::plot_facts(sc::parse_spec("colk:0.25+q8").stages.front()).keep_fraction == 0.25);
  CHECK(std::isnan(sc::plot_facts(sc::parse_spec("colk").stages.front()).keep_fraction));
  CHECK(sc::make_codec("colk:0.250+none")->spec() == "colk:0.25");
  // Gradients: refused (a flat [1, N] gradient has no channels); fw and bw: valid.
  CHECK_THROWS_WITH(sc::validate_role("compress.grad", "colk:0.25", sc::ChannelRole::kGradient),
                    Catch::Contains("no channels"));
  CHECK_THROWS_AS(sc::validate_role("compress.grad", "ef(colk:0.25)", sc::ChannelRole::kGradient),
                  slowpipe::UsageError);
  CHECK_NOTHROW(sc::validate_role("compress.fw", "colk:0.25", sc::ChannelRole::kForward));
  CHECK_NOTHROW(sc::validate_role("compress.bw", "colk:0.1+q8", sc::ChannelRole::kBackward));
  // colk publishes no per-element mask: a topk:shared backward is refused
  // (control: after topk:0.25 it is accepted).
  CHECK_FALSE(sc::ChannelSpec::parse("colk:0.25", false).sparsifies());
  CHECK(sc::ChannelSpec::parse("topk:0.25", false).sparsifies());
  CHECK_THROWS_AS(
      sc::validate_role("compress.bw", "topk:shared", sc::ChannelRole::kBackward, "colk:0.25"),
      slowpipe::UsageError);
  CHECK_NOTHROW(
      sc::validate_role("compress.bw", "topk:shared", sc::ChannelRole::kBackward, "topk:0.25"));
  // A boundary with colk both ways: what arrives is the codec's decode, and the
  // bytes sent are wire_bytes.
  const sc::Shape shape = {2, 6, 40};
  for (const std::string scheme : {"", "ef"}) {
    const auto wrap = [&](const std::string& s) {
      return scheme.empty() ? s : scheme + "(" + s + ")";
    };
    const std::string fw = wrap("colk:0.25"), bw = wrap("colk:0.1+q8");
    INFO(fw << " / " << bw);
    sc::Boundary b = sc::make_boundary(sc::ChannelSpec::parse(fw, false),
                                       sc::ChannelSpec::parse(bw, true), sc::ChannelContext{});
    const at::Tensor ids = at::arange(2, at::kLong);
    for (int step = 0; step < 2; ++step) {
      const at::Tensor a = at::randn(shape), g = at::randn(shape);
      sc::TransferStats fst, bst;
      const at::Tensor fa = b.fw->transfer(a, ids, &fst), bg = b.bw->transfer(g, ids, &bst);
      CHECK(fst.bytes == sc::wire_bytes(parsed(fw), shape));
      CHECK(bst.bytes == sc::wire_bytes(parsed(bw), shape));
      if (scheme.empty()) {
        auto fcodec = sc::make_codec("colk:0.25"), bcodec = sc::make_codec("colk:0.1+q8");
        CHECK(at::equal(fa, fcodec->decode(fcodec->encode(a), shape)));
        CHECK(at::equal(bg, bcodec->decode(bcodec->encode(g), shape)));
        // 10 of 40 channels arrive, the rest are zero in every token.
        const at::Tensor per_channel = fa.abs().sum(at::IntArrayRef{0, 1});
        CHECK((per_channel > 0).sum().item().toLong() == 10);
      }
    }
  }
}
