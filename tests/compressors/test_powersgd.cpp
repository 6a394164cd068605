// PowerSGD (compressors/codecs/internal/powersgd.h) against a naive double-precision reference
// (powersgd_reference.h), the warm-start rules (second step from
// the first step's Q; fresh codec, other shape or other seed from the seeded
// init), error feedback through ef(...), exact rank-R inputs, exact wire sizes,
// the sender/receiver split, checkpoints, the spec and the decoder's checks.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "compressors/channels/internal/feedback.h"
#include "compressors/codecs/internal/powersgd.h"
#include "compressors/codecs/quantizer.h"
#include "powersgd_reference.h"
#include "spec_checks.h"
#include "tests/common/parsed_spec.h"
#include "tests/compressors/tensor_values.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {

using Matrix = sc::naive::Matrix;  // row-major

// The naive reference of one power step: M [n, m] (zero-padded), Q0 [m, r].
using Reference = sc::naive::PowerStep;
Reference naive_step(const Matrix& mat, int64_t n, int64_t m, const Matrix& q0, int r) {
  return sc::naive::power_step(mat, n, m, q0, r);
}

using slowpipe::test::floats;

// The matrix the codec sees (zero-padded to rows * cols).
Matrix as_matrix(const std::vector<float>& x, const sc::LowRankGeometry& g) {
  Matrix mat(g.rows * g.cols, 0.0);
  for (size_t i = 0; i < x.size(); ++i) mat[i] = x[i];
  return mat;
}

std::vector<float> message_floats(const sc::Message& msg) {
  std::vector<float> v(msg.size() / 4);
  std::memcpy(v.data(), msg.data(), msg.size());
  return v;
}

double max_abs_diff(const std::vector<float>& a, const Matrix& b, size_t offset, size_t n) {
  double d = 0;
  for (size_t i = 0; i < n; ++i) d = std::max(d, std::fabs(a[offset + i] - b[i]));
  return d;
}
double max_abs(const Matrix& b) {
  double d = 0;
  for (double v : b) d = std::max(d, std::fabs(v));
  return d;
}

sc::ChannelContext context(uint64_t seed = 7) {
  sc::ChannelContext ctx;
  ctx.seed = seed;
  return ctx;
}

}  // namespace

TEST_CASE("PowerSGD: matrix views and exact wire sizes") {
  // GPT-2 XL activation, one sample: [B*T, C] = [1024, 1600], (1024 + 1600) * 4 values.
  const sc::Shape act = {1, 1024, 1600};
  auto g = sc::lowrank_geometry(act, sc::MatrixView::kLast, 4);
  REQUIRE((g.rows == 1024 && g.cols == 1600 && g.compressed && g.values() == 10496));
  REQUIRE(sc::wire_bytes(parsed("powersgd:4"), act) == 41984);
  REQUIRE(sc::wire_bytes(parsed("powersgd:4:fp16"), act) == 20992);
  // The paper's [shape[0], rest] view of the same tensor is one row: sent as is.
  g = sc::lowrank_geometry(act, sc::MatrixView::kRows, 4);
  REQUIRE((g.rows == 1 && g.cols == 1638400 && !g.compressed));
  REQUIRE(sc::wire_bytes(parsed("powersgd:4:rows"), act) == 4ULL * 1638400);
  // A [64, 1024] gradient matrix: (64 + 1024) * 4 values.
  REQUIRE(sc::wire_bytes(parsed("powersgd:4"), {64, 1024}) == 4ULL * 4352);
  // Flat gradient [1, N] in the square view: w = ceil(sqrt(N)), rows = ceil(N / w).
  g = sc::lowrank_geometry({1, 1000}, sc::MatrixView::kSquare, 2);
  REQUIRE((g.cols == 32 && g.rows == 32 && g.compressed && g.values() == 128));
  g = sc::lowrank_geometry({1, 1025}, sc::MatrixView::kSquare, 2);
  REQUIRE((g.cols == 33 && g.rows == 32));
  REQUIRE(sc::wire_bytes(sc::GradientSpec::parse("ef(powersgd:2)").resolved(), {1, 1000}) ==
          4 * 128);
  // The uncompressed rule: (n + m) r >= n m sends the tensor (rank too high,
  // vectors, scalars, empty tensors).
  REQUIRE(sc::wire_bytes(parsed("powersgd:4"), {8, 8}) == 4 * 64);    // 64 values either way
  REQUIRE(sc::wire_bytes(parsed("powersgd:3"), {8, 8}) == 4 * 48);    // 48 < 64
  REQUIRE(sc::wire_bytes(parsed("powersgd:2"), {1000}) == 4 * 1000);  // a vector
  REQUIRE(sc::wire_bytes(parsed("powersgd:1"), {}) == 4);
  REQUIRE(sc::wire_bytes(parsed("powersgd:1"), {0, 5}) == 0);
  // The message has exactly that size, compressed or not.
  for (const sc::Shape& shape :
       {sc::Shape{5, 7, 9}, sc::Shape{8, 8}, sc::Shape{30}, sc::Shape{3, 40}}) {
    for (const std::string spec : {"powersgd:2", "powersgd:3:fp16", "powersgd:1:square"}) {
      auto codec = sc::make_codec(spec, 1);
      const at::Tensor x = at::randn(at::IntArrayRef(shape));
      REQUIRE(codec->encode(x).size() == sc::wire_bytes(parsed(spec), shape));
    }
  }
}

TEST_CASE("PowerSGD: one step and the warm-started next step match the naive reference") {
  at::manual_seed(3);
  struct Case {
    sc::Shape shape;
    std::string spec;
    int rank;
    sc::MatrixView view;
  };
  const std::vector<Case> cases = {
      {{16, 24}, "powersgd:1", 1, sc::MatrixView::kLast},
      {{16, 24}, "powersgd:4", 4, sc::MatrixView::kLast},
      {{2, 9, 20}, "powersgd:3", 3, sc::MatrixView::kLast},
      {{6, 5, 8}, "powersgd:2:rows", 2, sc::MatrixView::kRows},
      {{1, 777}, "powersgd:3:square", 3, sc::MatrixView::kSquare},
      {{40, 12}, "powersgd:5", 5, sc::MatrixView::kLast},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    const uint64_t seed = 41;
    auto codec = sc::make_codec(c.spec, seed);
    const auto g = sc::lowrank_geometry(c.shape, c.view, c.rank);
    REQUIRE(g.compressed);
    const size_t pr = g.rows * c.rank, qr = g.cols * c.rank;
    std::vector<float> init = sc::powersgd_init(seed, g.cols, c.rank);
    Matrix q_ref(init.begin(), init.end());
    for (int step = 0; step < 2; ++step) {
      INFO("step " << step);
      const at::Tensor x = at::randn(at::IntArrayRef(c.shape));
      const std::vector<float> xv = floats(x);
      const Reference ref = naive_step(as_matrix(xv, g), g.rows, g.cols, q_ref, c.rank);
      const sc::Message msg = codec->encode(x);
      const std::vector<float> got = message_floats(msg);
      REQUIRE(got.size() == pr + qr);
      const double scale = max_abs(ref.q);
      CHECK(max_abs_diff(got, ref.p_hat, 0, pr) < 1e-5);
      CHECK(max_abs_diff(got, ref.q, pr, qr) < 1e-5 * scale);
      const std::vector<float> out = floats(codec->decode(msg, c.shape));
      CHECK(max_abs_diff(out, ref.approx, 0, out.size()) < 1e-5 * scale);
      // The sender keeps exactly the Q it sent.
      const auto* p = dynamic_cast<const sc::PowerSgd*>(codec.get());
      REQUIRE(p->warm());
      REQUIRE(p->factor() == std::vector<float>(got.begin() + pr, got.end()));
      // The reference continues from its own Q (warm start).
      q_ref = ref.q;
    }
  }
}

TEST_CASE("PowerSGD: warm-start rules") {
  at::manual_seed(4);
  const sc::Shape shape = {12, 20}, other = {10, 20};
  const at::Tensor x1 = at::randn(at::IntArrayRef(shape)), x2 = at::randn(at::IntArrayRef(shape));
  auto a = sc::make_codec("powersgd:2", 9);
  const sc::Message m1 = a->encode(x1);
  // A fresh codec with the same seed starts from the same init: the same bytes.
  REQUIRE(sc::make_codec("powersgd:2", 9)->encode(x1) == m1);
  // Another seed: another init, other bytes.
  REQUIRE(sc::make_codec("powersgd:2", 10)->encode(x1) != m1);
  // Step 2 starts from step 1's Q, not from the init: a fresh codec differs.
  const sc::Message m2 = a->encode(x2);
  REQUIRE(sc::make_codec("powersgd:2", 9)->encode(x2) != m2);
  // Warm start on the same input converges: step 2 on x1 again is at least as good.
  auto b = sc::make_codec("powersgd:2", 9);
  const auto err = [&](const sc::Message& m) {
    return (b->decode(m, shape) - x1).norm().item<double>();
  };
  const double e1 = err(b->encode(x1)), e2 = err(b->encode(x1)), e3 = err(b->encode(x1));
  REQUIRE(e2 <= e1 * (1 + 1e-6));
  REQUIRE(e3 <= e2 * (1 + 1e-6));
  // A different shape restarts from the seeded init (bit for bit a fresh codec),
  // and so does the way back.
  const at::Tensor y = at::randn(at::IntArrayRef(other));
  REQUIRE(a->encode(y) == sc::make_codec("powersgd:2", 9)->encode(y));
  REQUIRE(a->encode(x1) == m1);
}

TEST_CASE("PowerSGD: an exact rank-R input is reconstructed after one step") {
  at::manual_seed(5);
  for (int r : {1, 2, 4}) {
    INFO("rank " << r);
    const at::Tensor x = at::matmul(at::randn({64, r}), at::randn({r, 48}));
    auto codec = sc::make_codec("powersgd:" + std::to_string(r), 2);
    at::Tensor out = codec->decode(codec->encode(x), {64, 48});
    CHECK((out - x).norm().item<double>() / x.norm().item<double>() < 1e-5);
    out = codec->decode(codec->encode(x), {64, 48});
    CHECK((out - x).norm().item<double>() / x.norm().item<double>() < 1e-5);
    // A lower rank cannot: the control.
    if (r > 1) {
      auto low = sc::make_codec("powersgd:" + std::to_string(r - 1), 2);
      at::Tensor o = low->decode(low->encode(x), {64, 48});
      CHECK((o - x).norm().item<double>() / x.norm().item<double>() > 1e-2);
    }
  }
  // A matrix of rank below R (here zero) leaves the extra columns of P at zero.
  auto codec = sc::make_codec("powersgd:3", 2);
  const at::Tensor zero = at::zeros({10, 10});
  REQUIRE(at::equal(codec->decode(codec->encode(zero), {10, 10}), zero));
}

TEST_CASE("PowerSGD under ef(): the residual is carried into the next step") {
  at::manual_seed(6);
  const sc::Shape shape = {3, 8, 16};
  auto ch = sc::make_channel(parsed("ef(powersgd:2)"), context(7));
  auto& ef = dynamic_cast<sc::EfChannel&>(*ch);
  auto mirror = sc::make_codec("powersgd:2", 7);  // the same codec, driven by hand
  at::Tensor sum_in = at::zeros(at::IntArrayRef(shape)),
             sum_out = at::zeros(at::IntArrayRef(shape));
  std::vector<float> e(16 * 24, 0.0F);
  for (int step = 0; step < 5; ++step) {
    const at::Tensor x = at::randn(at::IntArrayRef(shape));
    const at::Tensor out = ch->transfer(x, at::Tensor(), nullptr);
    // p = x + e; out = D(C(p)); e <- p - out
    at::Tensor p = x + at::from_blob(e.data(), at::IntArrayRef(shape), at::kFloat);
    const at::Tensor want = mirror->decode(mirror->encode(p), shape);
    REQUIRE(at::equal(out, want));
    const std::vector<float> pv = floats(p), ov = floats(out);
    for (size_t i = 0; i < e.size(); ++i) e[i] = pv[i] - ov[i];
    REQUIRE(ef.error() == e);
    sum_in += x;
    sum_out += out;
  }
  // Nothing is lost: what was sent plus what is still owed is what came in.
  const at::Tensor owed = at::from_blob(e.data(), at::IntArrayRef(shape), at::kFloat);
  REQUIRE(at::allclose(sum_out + owed, sum_in, 1e-4, 1e-4));
  // The residual is real (rank 2 of a [24, 16] matrix drops most of it).
  REQUIRE(owed.norm().item<double>() > 0.1 * sum_in.norm().item<double>() / 5);
}

TEST_CASE("PowerSGD: send/receive halves equal transfer(), bytes equal wire_bytes") {
  at::manual_seed(8);
  const sc::Shape shape = {4, 6, 10};
  for (const std::string spec :
       {"powersgd:2", "ef(powersgd:2)", "ef21(powersgd:3:fp16)", "ef(powersgd:1:rows)"}) {
    INFO(spec);
    auto one = sc::make_channel(parsed(spec), context()),
         up = sc::make_channel(parsed(spec), context()),
         down = sc::make_channel(parsed(spec), context());
    for (int step = 0; step < 4; ++step) {
      const at::Tensor x = at::randn(at::IntArrayRef(shape));
      sc::TransferStats st;
      const at::Tensor want = one->transfer(x, at::Tensor(), &st);
      REQUIRE(st.bytes == sc::wire_bytes(parsed(spec), shape));
      sc::Message msg;
      up->send(x, at::Tensor(), msg, nullptr);
      REQUIRE(msg.size() == st.bytes);
      REQUIRE(at::equal(down->receive(msg, shape, at::Tensor(), nullptr), want));
    }
  }
}

TEST_CASE("PowerSGD: checkpoints carry the warm start; infer() leaves it alone") {
  at::manual_seed(9);
  const sc::Shape shape = {5, 4, 12};
  std::vector<at::Tensor> xs;
  xs.reserve(6);
  for (int t = 0; t < 6; ++t) xs.push_back(at::randn(at::IntArrayRef(shape)));
  for (const std::string spec : {"ef(powersgd:3)", "powersgd:2:fp16"}) {
    INFO(spec);
    auto a = sc::make_channel(parsed(spec), context());
    for (int t = 0; t < 3; ++t) a->transfer(xs[t], at::Tensor(), nullptr);
    sc::StateDict state;
    a->save_state("g.", state);
    REQUIRE(state.count("g.codec_f32.q"));
    REQUIRE(state.at("g.codec_f32.q").numel() == 12 * (spec[0] == 'e' ? 3 : 2));
    auto b = sc::make_channel(parsed(spec), context()),
         fresh = sc::make_channel(parsed(spec), context());
    b->load_state("g.", state);
    bool fresh_differs = false;
    for (int t = 3; t < 6; ++t) {
      a->infer(xs[0], nullptr);  // evaluation in between changes nothing
      const at::Tensor want = a->transfer(xs[t], at::Tensor(), nullptr);
      REQUIRE(at::equal(b->transfer(xs[t], at::Tensor(), nullptr), want));
      fresh_differs |= !at::equal(fresh->transfer(xs[t], at::Tensor(), nullptr), want);
    }
    REQUIRE(fresh_differs);  // the control: without the state, other results
  }
  // A corrupt checkpoint is refused.
  auto a = sc::make_channel(parsed("powersgd:2"), context());
  a->transfer(xs[0], at::Tensor(), nullptr);
  sc::StateDict state;
  a->save_state("", state);
  state["codec_f32.q"] = at::zeros({5});
  REQUIRE_THROWS_AS(sc::make_channel(parsed("powersgd:2"), context())->load_state("", state),
                    slowpipe::DataError);
  state.erase("codec_f32.q");
  REQUIRE_THROWS_AS(sc::make_channel(parsed("powersgd:2"), context())->load_state("", state),
                    slowpipe::DataError);
}

TEST_CASE("PowerSGD: fp16 values are what both sides use") {
  at::manual_seed(10);
  const sc::Shape shape = {20, 30};
  const at::Tensor x = at::randn(at::IntArrayRef(shape));
  auto h = sc::make_codec("powersgd:3:fp16", 1);
  const sc::Message msg = h->encode(x);
  REQUIRE(msg.size() == 2 * (20 + 30) * 3);
  std::vector<float> v(msg.size() / 2);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = sc::half_to_float(static_cast<uint16_t>(msg[2 * i] | (msg[2 * i + 1] << 8)));
  const auto* p = dynamic_cast<const sc::PowerSgd*>(h.get());
  REQUIRE(p->factor() == std::vector<float>(v.begin() + 60, v.end()));
  // Decoding is the product of the fp16 factors.
  const at::Tensor ph = at::from_blob(v.data(), {20, 3}, at::kFloat).to(at::kDouble);
  const at::Tensor qh = at::from_blob(v.data() + 60, {30, 3}, at::kFloat).to(at::kDouble);
  const at::Tensor want = at::matmul(ph, qh.t()).to(at::kFloat);
  REQUIRE(at::allclose(h->decode(msg, shape), want, 0, 1e-6));
  // fp32 factors are close to it, not equal.
  auto f = sc::make_codec("powersgd:3", 1);
  REQUIRE(!at::equal(f->decode(f->encode(x), shape), h->decode(msg, shape)));
}

TEST_CASE("PowerSGD: spec, errors with positions, roles, gradient spec") {
  REQUIRE(sc::canonical_spec(parsed("powersgd:4:last:fp32")) == "powersgd:4");
  REQUIRE(sc::canonical_spec(parsed("ef(powersgd:04:square:fp16)")) ==
          "ef(powersgd:4:square:fp16)");
  REQUIRE(sc::GradientSpec::parse("powersgd:4").resolved().text() == "powersgd:4:square");
  REQUIRE(sc::GradientSpec::parse("ef(powersgd:2:fp16)").resolved().text() ==
          "ef(powersgd:2:square:fp16)");
  REQUIRE(sc::GradientSpec::parse("ef(powersgd:2:square)").resolved().text() ==
          "ef(powersgd:2:square)");
  REQUIRE(sc::GradientSpec(sc::GradientSpec::parse("powersgd:4").resolved()).resolved() ==
          sc::GradientSpec::parse("powersgd:4").resolved());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"powersgd", "at position 9: expected ':R'"},
      {"powersgd:0", "at position 10: expected R, the rank"},
      {"powersgd:4.5", "at position 10: expected R"},
      {"powersgd:r=4", "at position 10: expected ':R'"},
      {"powersgd:4:cols", "at position 12: expected a powersgd option"},
      {"powersgd:4:rows:square", "at position 17: 'square' conflicts with 'rows'"},
      {"powersgd:4:fp16:fp16", "'fp16' is given twice"},
      {"topk:0.1+powersgd:2", "at position 10: expected a value codec"},
      {"powersgd:2+q4", "'+' may only follow topk or randk"},
  };
  slowpipe::test::require_refused(bad);
  // Roles: everywhere, but a gradient must not name a one-row view.
  for (const std::string spec : {"powersgd:2", "ef(powersgd:2)", "ef21(powersgd:1:fp16)"}) {
    sc::validate_role("compress.fw", spec, sc::ChannelRole::kForward);
    sc::validate_role("compress.bw", spec, sc::ChannelRole::kBackward);
    sc::validate_role("compress.grad", spec, sc::ChannelRole::kGradient);
  }
  sc::validate_role("compress.grad", "ef(powersgd:2:square)", sc::ChannelRole::kGradient);
  for (const std::string spec : {"powersgd:2:rows", "ef(powersgd:4:last)"})
    REQUIRE_THROWS_WITH(sc::validate_role("compress.grad", spec, sc::ChannelRole::kGradient),
                        Catch::Contains("compress.grad = " + spec + ": gradients cross"));
  REQUIRE_THROWS_AS(sc::validate_boundary(parsed("powersgd:2"), parsed("topk:shared")),
                    slowpipe::UsageError);
}

TEST_CASE("PowerSGD: refuses non-finite input; the decoder checks the factors") {
  auto codec = sc::make_codec("powersgd:2", 1);
  at::Tensor x = at::randn({8, 9});
  x.data_ptr<float>()[3 * 9 + 4] = NAN;
  REQUIRE_THROWS_AS(codec->encode(x), slowpipe::DataError);
  REQUIRE(!dynamic_cast<const sc::PowerSgd*>(codec.get())->warm());  // state untouched
  x.data_ptr<float>()[3 * 9 + 4] = 1.0F;
  sc::Message msg = codec->encode(x);
  REQUIRE_NOTHROW(codec->decode(msg, {8, 9}));
  sc::Message bad = msg;
  const float two = 2.0F;
  std::memcpy(bad.data(), &two, 4);  // P^ must be within [-1, 1]
  REQUIRE_THROWS_AS(codec->decode(bad, {8, 9}), slowpipe::DataError);
  bad = msg;
  const float inf = INFINITY;
  std::memcpy(bad.data() + msg.size() - 4, &inf, 4);  // Q must be finite
  REQUIRE_THROWS_AS(codec->decode(bad, {8, 9}), slowpipe::DataError);
  bad.pop_back();
  REQUIRE_THROWS_AS(codec->decode(bad, {8, 9}), slowpipe::DataError);
  // Values whose factors overflow fp16 are refused, not sent as inf.
  REQUIRE_THROWS_AS(sc::make_codec("powersgd:1:fp16", 1)->encode(at::full({8, 9}, 3e4)),
                    slowpipe::DataError);
}
