// PowerSGD on inputs of rank below R and on zero tensors (issue 23; the rule in
// docs/codec-spec.md, "PowerSGD", steps 0 and 2): constant tensors, one-hot
// rows, repeated tokens and exact low-rank matrices come back as they went in
// (not scaled up by duplicated columns of P^), compared with the naive reference
// (powersgd_reference.h); a zero tensor does not stop the channel (Q's zero
// columns are re-seeded), alone, under ef(...), across a checkpoint and in a
// short training run whose gradients cross ef(powersgd:2). The controls run
// the pre-issue rule (one pass, only a norm of exactly 0 is 0) through the
// same reference and show the assertions would catch it.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compressors/channels/factory.h"
#include "compressors/channels/internal/feedback.h"
#include "compressors/codecs/internal/powersgd.h"
#include "powersgd_reference.h"
#include "tests/common/parsed_spec.h"
#include "tests/compressors/tensor_values.h"

namespace sc = slowpipe::compressors;
namespace nv = slowpipe::compressors::naive;

using slowpipe::test::parsed;

namespace {

using slowpipe::test::floats;

nv::Matrix as_matrix(const at::Tensor& x, const sc::LowRankGeometry& g) {
  const std::vector<float> v = floats(x);
  nv::Matrix mat(g.rows * g.cols, 0.0);
  for (size_t i = 0; i < v.size(); ++i) mat[i] = v[i];
  return mat;
}

// ||a - b|| / ||b|| over the first b.size() values of a (b the tensor as a
// zero-padded matrix, a a reconstruction of it).
double rel_error(const std::vector<double>& a, const nv::Matrix& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    n += b[i] * b[i];
  }
  return std::sqrt(d / n);
}
double rel_error(const at::Tensor& out, const at::Tensor& x) {
  return (out - x).norm().item<double>() / x.norm().item<double>();
}

// Largest |P^T P - D| over the columns of the message's P^ [rows, r], D the
// identity with zeros for zero columns: 0 for orthonormal-or-zero columns.
double orthonormality_defect(const sc::Message& msg, int64_t rows, int r) {
  std::vector<float> p(static_cast<size_t>(rows * r));
  std::memcpy(p.data(), msg.data(), 4 * p.size());
  double worst = 0;
  for (int k = 0; k < r; ++k)
    for (int l = 0; l <= k; ++l) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += double{p[i * r + k]} * p[i * r + l];
      const bool unit = k == l && dot > 0.5;
      worst = std::max(worst, std::fabs(dot - (unit ? 1.0 : 0.0)));
    }
  return worst;
}

int zero_columns(const sc::Message& msg, int64_t rows, int r) {
  std::vector<float> p(static_cast<size_t>(rows * r));
  std::memcpy(p.data(), msg.data(), 4 * p.size());
  int zeros = 0;
  for (int k = 0; k < r; ++k) {
    bool zero = true;
    for (int64_t i = 0; i < rows; ++i) zero = zero && p[i * r + k] == 0.0F;
    zeros += zero ? 1 : 0;
  }
  return zeros;
}

at::Tensor one_hot_rows(int64_t rows, int64_t cols, int distinct) {
  at::Tensor x = at::zeros({rows, cols});
  for (int64_t i = 0; i < rows; ++i) x[i][(i % distinct) * 5 % cols] = 1.0F;
  return x;
}

// [B, T, C] where every sequence repeats `distinct` token vectors.
at::Tensor repeated_tokens(int64_t b, int64_t t, int64_t c, int distinct) {
  const at::Tensor tokens = at::randn({distinct, c});
  at::Tensor x = at::empty({b, t, c});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < t; ++j) x[i][j] = tokens[(i + j) % distinct];
  return x;
}

sc::ChannelContext rank_context(uint64_t seed) {
  sc::ChannelContext ctx;
  ctx.seed = seed;
  return ctx;
}

}  // namespace

TEST_CASE("PowerSGD: inputs of rank below R come back as they went in") {
  at::manual_seed(23);
  struct Case {
    std::string name, spec;
    int rank;
    sc::MatrixView view;
    at::Tensor x;
    bool exactly_dependent;  // P's columns exactly dependent: the old rule scaled it up
  };
  const at::Tensor a = at::randint(-3, 4, {40, 2}), b = at::randint(-3, 4, {2, 30});
  const std::vector<Case> cases = {
      {"ones [16,16]", "powersgd:2", 2, sc::MatrixView::kLast, at::ones({16, 16}), true},
      {"ones [1024,1600]", "powersgd:4", 4, sc::MatrixView::kLast, at::ones({1024, 1600}), true},
      {"constant [2,8,24]", "powersgd:3", 3, sc::MatrixView::kLast, at::full({2, 8, 24}, -3.5),
       true},
      {"one-hot rows, 3 hot columns", "powersgd:4", 4, sc::MatrixView::kLast,
       one_hot_rows(32, 32, 3), true},
      {"one-hot rows, 1 hot column", "powersgd:8", 8, sc::MatrixView::kLast,
       one_hot_rows(32, 32, 1), true},
      {"repeated tokens", "powersgd:4", 4, sc::MatrixView::kLast, repeated_tokens(4, 16, 24, 2),
       true},
      {"integer rank 2", "powersgd:5", 5, sc::MatrixView::kLast, at::matmul(a, b).to(at::kFloat),
       false},
      {"fp32 product of rank 2", "powersgd:4", 4, sc::MatrixView::kLast,
       at::matmul(at::randn({40, 2}), at::randn({2, 30})), false},
      {"flat ones, square view", "powersgd:3:square", 3, sc::MatrixView::kSquare,
       at::ones({1, 1000}), true},
  };
  for (const Case& c : cases) {
    INFO(c.name << ", " << c.spec);
    const uint64_t seed = 0;
    const sc::Shape shape(c.x.sizes().begin(), c.x.sizes().end());
    const auto g = sc::lowrank_geometry(shape, c.view, c.rank);
    REQUIRE(g.compressed);
    const nv::Matrix mat = as_matrix(c.x, g);
    auto codec = sc::make_codec(c.spec, seed);
    const std::vector<float> init = sc::powersgd_init(seed, g.cols, c.rank);
    nv::Matrix q_ref(init.begin(), init.end());
    for (int step = 0; step < 3; ++step) {  // cold, then warm (zero columns re-seeded)
      INFO("step " << step);
      const nv::PowerStep ref =
          nv::power_step(mat, g.rows, g.cols, nv::reseed(q_ref, seed, g.cols, c.rank), c.rank);
      const sc::Message msg = codec->encode(c.x);
      const at::Tensor out = codec->decode(msg, shape);
      CHECK(rel_error(out, c.x) < 1e-6);
      CHECK(rel_error(ref.approx, mat) < 1e-6);
      CHECK(orthonormality_defect(msg, g.rows, c.rank) < 1e-6);
      // The codec and the reference agree on which columns are dependent.
      int ref_zeros = 0;
      for (int k = 0; k < c.rank; ++k) {
        double sum_abs = 0;
        for (int64_t i = 0; i < g.rows; ++i) sum_abs += std::fabs(ref.p_hat[i * c.rank + k]);
        ref_zeros += sum_abs == 0 ? 1 : 0;
      }
      CHECK(zero_columns(msg, g.rows, c.rank) == ref_zeros);
      if (c.exactly_dependent) CHECK(ref_zeros > 0);
      q_ref = ref.q;
    }
    // The control: the rule before issue 23 fails the same assertion on the
    // exactly dependent inputs (a duplicated column adds a second copy of M's
    // component along it: 2x for a constant tensor).
    if (c.exactly_dependent) {
      const nv::PowerStep old = nv::power_step(
          mat, g.rows, g.cols, nv::Matrix(init.begin(), init.end()), c.rank, nv::Rule::kNormOnly);
      CHECK(rel_error(old.approx, mat) > 0.1);
    }
  }
  // fp16 factors: the same, to fp16's resolution.
  auto h = sc::make_codec("powersgd:2:fp16", 0);
  const at::Tensor ones = at::ones({16, 16});
  for (int step = 0; step < 2; ++step)
    CHECK(rel_error(h->decode(h->encode(ones), {16, 16}), ones) < 2e-3);
}

TEST_CASE("PowerSGD: a zero tensor does not stop the channel") {
  at::manual_seed(24);
  const sc::Shape shape = {12, 20};
  std::vector<at::Tensor> xs;
  xs.reserve(4);
  for (int t = 0; t < 4; ++t) xs.push_back(at::randn(at::IntArrayRef(shape)));
  const at::Tensor zero = at::zeros(at::IntArrayRef(shape));
  SECTION("after a zero tensor the codec is bit for bit a fresh one") {
    auto codec = sc::make_codec("powersgd:2", 5), fresh = sc::make_codec("powersgd:2", 5);
    REQUIRE(at::equal(codec->decode(codec->encode(zero), shape), zero));
    for (const at::Tensor& x : xs) {
      const sc::Message msg = codec->encode(x);
      REQUIRE(msg == fresh->encode(x));
      CHECK(rel_error(codec->decode(msg, shape), x) < 0.95);  // not zero: it sends something
    }
  }
  SECTION("after a rank-1 tensor the second column is re-seeded and used") {
    auto codec = sc::make_codec("powersgd:2", 5), fresh = sc::make_codec("powersgd:2", 5),
         rank1 = sc::make_codec("powersgd:1", 5);
    codec->encode(at::ones(at::IntArrayRef(shape)));
    const auto* p = dynamic_cast<const sc::PowerSgd*>(codec.get());
    int zero_q_columns = 0;
    for (int k = 0; k < 2; ++k) {
      bool zero = true;
      for (int64_t j = 0; j < 20; ++j) zero = zero && p->factor()[j * 2 + k] == 0.0F;
      zero_q_columns += zero ? 1 : 0;
    }
    REQUIRE(zero_q_columns == 1);
    // Then one tensor of two strong directions plus noise, four times: the
    // warm start converges to its best rank-2 approximation.
    const at::Tensor x =
        at::matmul(at::randn({12, 2}) * at::tensor({3.0F, 2.0F}), at::randn({2, 20})) +
        0.1 * at::randn(at::IntArrayRef(shape));
    double err = 0, err_fresh = 0, err_rank1 = 0;
    for (int step = 0; step < 4; ++step) {
      const sc::Message msg = codec->encode(x);
      CHECK(zero_columns(msg, 12, 2) == 0);
      err = rel_error(codec->decode(msg, shape), x);
      err_fresh = rel_error(fresh->decode(fresh->encode(x), shape), x);
      err_rank1 = rel_error(rank1->decode(rank1->encode(x), shape), x);
    }
    INFO("relative errors after 4 steps: " << err << ", fresh " << err_fresh << ", rank 1 "
                                           << err_rank1);
    // Both columns at work: far better than rank 1, as good as a fresh channel.
    CHECK(err < err_rank1 * 0.5);
    CHECK(err < err_fresh * 1.01);
  }
  SECTION("ef(powersgd:2) whose first input is zero") {
    auto ch = sc::make_channel(parsed("ef(powersgd:2)"), rank_context(7)),
         fresh = sc::make_channel(parsed("ef(powersgd:2)"), rank_context(7));
    REQUIRE(at::equal(ch->transfer(zero, at::Tensor(), nullptr), zero));
    for (const at::Tensor& x : xs)
      REQUIRE(at::equal(ch->transfer(x, at::Tensor(), nullptr),
                        fresh->transfer(x, at::Tensor(), nullptr)));
    const auto& ef = dynamic_cast<const sc::EfChannel&>(*ch);
    REQUIRE(ef.error() == dynamic_cast<const sc::EfChannel&>(*fresh).error());
  }
  SECTION("a checkpoint with zero columns in Q resumes bit for bit") {
    auto a = sc::make_channel(parsed("ef(powersgd:3)"), rank_context(7));
    a->transfer(at::ones(at::IntArrayRef(shape)), at::Tensor(), nullptr);
    sc::StateDict state;
    a->save_state("g.", state);
    REQUIRE(
        state.at("g.codec_f32.q").view({20, 3}).abs().sum(0).eq(0).any().item<bool>());  // a zero
                                                                                         // column
    auto b = sc::make_channel(parsed("ef(powersgd:3)"), rank_context(7)),
         other = sc::make_channel(parsed("ef(powersgd:3)"), rank_context(7));
    b->load_state("g.", state);
    bool other_differs = false;
    for (const at::Tensor& x : xs) {
      const at::Tensor want = a->transfer(x, at::Tensor(), nullptr);
      REQUIRE(at::equal(b->transfer(x, at::Tensor(), nullptr), want));
      other_differs |= !at::equal(other->transfer(x, at::Tensor(), nullptr), want);
    }
    REQUIRE(other_differs);  // the control: the state matters
  }
}

TEST_CASE("PowerSGD under ef(): rank-deficient inputs cross exactly, the residual stays ~0") {
  for (const std::string spec : {"ef(powersgd:2)", "ef(powersgd:4)"}) {
    INFO(spec);
    auto ch = sc::make_channel(parsed(spec), rank_context(0));
    const at::Tensor x = at::ones({16, 16});
    for (int step = 0; step < 5; ++step) {
      CHECK(rel_error(ch->transfer(x, at::Tensor(), nullptr), x) < 1e-6);
      const std::vector<float>& e = dynamic_cast<const sc::EfChannel&>(*ch).error();
      double worst = 0;
      for (float v : e) worst = std::max(worst, double{std::fabs(v)});
      CHECK(worst < 1e-6);
    }
  }
}

TEST_CASE("PowerSGD: a short training run whose gradients cross ef(powersgd:2)") {
  // Least squares W [16, 24] -> W* on six unit token vectors; every batch is
  // one token repeated (a rank-1 gradient), and the first batch is padding
  // (all zero: a zero gradient). SGD with the gradient through ef(powersgd:2)
  // follows plain SGD, since rank-1 gradients cross exactly.
  at::manual_seed(25);
  const int64_t d_out = 16, d_in = 24, batch = 8;
  const at::Tensor w_star = at::randn({d_out, d_in});
  at::Tensor tokens = at::randn({6, d_in});
  tokens = tokens / tokens.norm(2, 1, true);
  const auto loss = [&](const at::Tensor& w) {
    return (at::matmul(tokens, w.t()) - at::matmul(tokens, w_star.t())).pow(2).sum().item<double>();
  };
  const auto gradient = [&](const at::Tensor& w, const at::Tensor& x) {  // x [batch, d_in]
    const at::Tensor residual = at::matmul(x, w.t()) - at::matmul(x, w_star.t());
    return at::matmul(residual.t(), x) / batch;  // [d_out, d_in]
  };
  auto ch = sc::make_channel(parsed("ef(powersgd:2)"), rank_context(3));
  at::Tensor w = at::zeros({d_out, d_in}), w_plain = at::zeros({d_out, d_in});
  const double lr = 0.5, start = loss(w);
  for (int step = 0; step < 80; ++step) {
    const at::Tensor x =
        step == 0 ? at::zeros({batch, d_in}) : tokens[step % 6].unsqueeze(0).expand({batch, d_in});
    w -= lr * ch->transfer(gradient(w, x), at::Tensor(), nullptr);
    w_plain -= lr * gradient(w_plain, x);
  }
  INFO("loss " << start << " -> " << loss(w) << " (plain SGD " << loss(w_plain) << ")");
  CHECK(loss(w_plain) < 1e-3 * start);  // the task is learnable in 80 steps
  CHECK(loss(w) < 1e-3 * start);
  CHECK((w - w_plain).abs().max().item<double>() < 1e-4);
}
