// The Stiefel step (sim/internal/stiefel.h, docs/optimizers.md "The Stiefel
// step") against a reference written here in plain double loops, whose polar
// factor comes from a Jacobi eigendecomposition of X^T X rather than from the
// Newton-Schulz iteration: the tangent projection, the polar factor, two steps
// with momentum; orthonormality over many steps; descent to a known top-k
// eigenspace; the other parameters stepped exactly as without the Stiefel
// ones, under every listed optimizer; the momentum exchange; bitwise resume and
// the refusals (archives, config keys).
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "common/errors.h"
#include "common/options.h"
#include "config/optim_registry.h"
#include "double_matrix.h"
#include "sim/internal/stiefel.h"
#include "sim/optimizer.h"

namespace ss = slowpipe::sim;
using slowpipe::models::ParamRole;

namespace {

using slowpipe::test::axpby;
using slowpipe::test::frobenius;
using slowpipe::test::Mat;
using slowpipe::test::matmul;
using slowpipe::test::transpose;
using slowpipe::test::zeros;

Mat identity(int64_t n) {
  Mat m = zeros(n, n);
  for (int64_t i = 0; i < n; ++i) m.at(i, i) = 1;
  return m;
}

Mat from_tensor(const at::Tensor& t) {
  const at::Tensor f = t.detach().to(at::kDouble).contiguous();
  Mat m = zeros(f.size(0), f.size(1));
  const double* d = f.data_ptr<double>();
  for (size_t i = 0; i < m.v.size(); ++i) m.v[i] = d[i];
  return m;
}

at::Tensor to_tensor(const Mat& m, at::ScalarType dtype) {
  return torch::tensor(m.v, torch::kDouble).view({m.rows, m.cols}).to(dtype);
}

double distance(const Mat& a, const Mat& b) {
  return frobenius(axpby(1, a, -1, b));
}

// Every value rounded to float, as a stored float parameter or momentum is.
Mat rounded(const Mat& a) {
  Mat r = a;
  for (double& x : r.v) x = static_cast<double>(static_cast<float>(x));
  return r;
}

// a - u sym(u^T a)
Mat tangent(const Mat& u, const Mat& a) {
  const Mat uta = matmul(transpose(u), a);
  const Mat s = axpby(0.5, uta, 0.5, transpose(uta));
  return axpby(1, a, -1, matmul(u, s));
}

// The symmetric a = v diag(w) v^T by cyclic Jacobi rotations.
void jacobi(Mat a, Mat& v, std::vector<double>& w) {
  const int64_t n = a.rows;
  v = identity(n);
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) off += a.at(p, q) * a.at(p, q);
    if (off < 1e-60) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        if (a.at(p, q) == 0) continue;
        const double theta = (a.at(q, q) - a.at(p, p)) / (2 * a.at(p, q));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::hypot(theta, 1.0));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q of a J, then of v J
          const double akp = a.at(k, p), akq = a.at(k, q);
          a.at(k, p) = c * akp - s * akq;
          a.at(k, q) = s * akp + c * akq;
          const double vkp = v.at(k, p), vkq = v.at(k, q);
          v.at(k, p) = c * vkp - s * vkq;
          v.at(k, q) = s * vkp + c * vkq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q of J^T (a J)
          const double apk = a.at(p, k), aqk = a.at(q, k);
          a.at(p, k) = c * apk - s * aqk;
          a.at(q, k) = s * apk + c * aqk;
        }
      }
    }
  }
  w.assign(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(i)] = a.at(i, i);
}

// x (x^T x)^(-1/2) from the eigendecomposition of x^T x.
Mat polar(const Mat& x) {
  Mat v;
  std::vector<double> w;
  jacobi(matmul(transpose(x), x), v, w);
  Mat scaled = v;  // v diag(w^(-1/2))
  for (int64_t i = 0; i < v.rows; ++i)
    for (int64_t j = 0; j < v.cols; ++j) scaled.at(i, j) /= std::sqrt(w[static_cast<size_t>(j)]);
  return matmul(x, matmul(scaled, transpose(v)));
}

// A [d, k] with orthonormal columns: Gram-Schmidt (twice) of a random matrix.
Mat random_orthonormal(int64_t d, int64_t k, uint64_t seed) {
  torch::manual_seed(seed);
  Mat q = from_tensor(torch::randn({d, k}, torch::kDouble));
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < j; ++i) {
        double dot = 0;
        for (int64_t r = 0; r < d; ++r) dot += q.at(r, i) * q.at(r, j);
        for (int64_t r = 0; r < d; ++r) q.at(r, j) -= dot * q.at(r, i);
      }
      double norm = 0;
      for (int64_t r = 0; r < d; ++r) norm += q.at(r, j) * q.at(r, j);
      for (int64_t r = 0; r < d; ++r) q.at(r, j) /= std::sqrt(norm);
    }
  }
  return q;
}

// ||U^T U - I||_F of a parameter, in double.
double orthonormality_error(const at::Tensor& u) {
  const Mat m = from_tensor(u);
  return distance(matmul(transpose(m), m), identity(m.cols));
}

slowpipe::config::OptimConfig config_of(const std::string& name) {
  slowpipe::config::OptimConfig c;
  c.name = name;
  return c;
}

std::string archive_bytes(const ss::StageOptimizer& o) {
  torch::serialize::OutputArchive out;
  o.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  return bytes.str();
}

void load_bytes(ss::StageOptimizer& o, const std::string& bytes) {
  std::istringstream in_bytes(bytes);
  torch::serialize::InputArchive in;
  in.load_from(in_bytes);
  o.load(in);
}

std::vector<at::Tensor> detached_copies(const std::vector<at::Tensor>& ps) {
  std::vector<at::Tensor> out;
  out.reserve(ps.size());
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

// Gradients that depend on the step and on the parameters.
void set_grads(const std::vector<at::Tensor>& ps, int step) {
  for (const auto& p : ps) {
    p.mutable_grad() = torch::full_like(p, 0.01 * (step + 1)) - p.detach() * 0.5;
  }
}

}  // namespace

TEST_CASE("Stiefel: the tangent projection gives U^T xi + xi^T U = 0 and equals the reference") {
  for (const auto& [d, k] : std::vector<std::pair<int64_t, int64_t>>{{9, 3}, {6, 6}, {32, 1}}) {
    INFO(d << " x " << k);
    const Mat u = random_orthonormal(d, k, static_cast<uint64_t>(d * 7 + k));
    const at::Tensor g = torch::randn({d, k}, torch::kDouble) * 3.0;
    const Mat xi = from_tensor(ss::stiefel_tangent(to_tensor(u, at::kDouble), g));
    const Mat utxi = matmul(transpose(u), xi);
    CHECK(frobenius(axpby(1, utxi, 1, transpose(utxi))) < 1e-12 * frobenius(from_tensor(g)));
    CHECK(distance(xi, tangent(u, from_tensor(g))) < 1e-12 * frobenius(xi));
    // Control: the gradient itself is not tangent.
    const Mat utg = matmul(transpose(u), from_tensor(g));
    CHECK(frobenius(axpby(1, utg, 1, transpose(utg))) > 1e-2);
  }
}

TEST_CASE("Stiefel: the Newton-Schulz polar factor equals the Jacobi reference") {
  torch::manual_seed(3);
  for (const double scale : {1.0, 100.0, 0.01}) {
    for (const auto& [d, k] : std::vector<std::pair<int64_t, int64_t>>{{10, 4}, {5, 5}, {40, 8}}) {
      INFO(d << " x " << k << ", scale " << scale);
      // A well-conditioned random matrix: orthonormal plus a perturbation.
      const Mat x = axpby(scale, random_orthonormal(d, k, static_cast<uint64_t>(d + k)),
                          scale * 0.3, from_tensor(torch::randn({d, k}, torch::kDouble)));
      int iterations = -1;
      const Mat q = from_tensor(ss::polar_newton_schulz(to_tensor(x, at::kDouble), &iterations));
      CHECK(distance(q, polar(x)) < 1e-10);
      CHECK(distance(matmul(transpose(q), q), identity(k)) < 1e-11);
      CHECK(iterations > 0);
      CHECK(iterations < ss::kPolarMaxIterations);
    }
  }
}

TEST_CASE("Stiefel: a retraction of a typical step takes at most 5 iterations") {
  // U in float, M tangent at U with eta ||M||_F = 0.1: X^T X = I + eta^2 M^T M.
  for (const auto& [d, k] : std::vector<std::pair<int64_t, int64_t>>{{64, 16}, {128, 32}}) {
    INFO(d << " x " << k);
    const Mat u = rounded(random_orthonormal(d, k, static_cast<uint64_t>(d)));
    Mat m = tangent(u, from_tensor(torch::randn({d, k}, torch::kDouble)));
    m = axpby(0.1 / frobenius(m), m, 0, m);
    int iterations = -1;
    const at::Tensor q =
        ss::polar_newton_schulz(to_tensor(axpby(1, u, -1, m), at::kDouble), &iterations);
    CHECK(iterations <= 5);
    CHECK(orthonormality_error(q) < 1e-12);
  }
}

TEST_CASE("Stiefel: U stays orthonormal over 300 steps of random gradients") {
  for (const auto& [d, k] : std::vector<std::pair<int64_t, int64_t>>{{16, 4}, {8, 8}, {64, 16}}) {
    INFO(d << " x " << k);
    const at::Tensor u = to_tensor(random_orthonormal(d, k, 11), at::kFloat).requires_grad_();
    const at::Tensor control = u.detach().clone();  // moved by plain SGD
    ss::StageOptimizer o(config_of("adamw"), {u}, {ParamRole::kStiefel});
    o.set_lr(0.05);
    torch::manual_seed(5);
    double worst = 0;
    for (int step = 0; step < 300; ++step) {
      const at::Tensor g = torch::randn({d, k}) * (1.0 + step % 7);
      u.mutable_grad() = g;
      control.sub_(g * 0.05);
      o.step();
      worst = std::max(worst, orthonormality_error(u));
    }
    CHECK(worst < 1e-5);
    CHECK(orthonormality_error(control) > 1.0);  // would fail without the retraction
  }
}

TEST_CASE("Stiefel: two steps with momentum equal the double reference") {
  slowpipe::config::OptimConfig c = config_of("sgd");
  c.stiefel_lr_scale = 0.5;
  c.stiefel_momentum = 0.8;
  for (const auto& [d, k] : std::vector<std::pair<int64_t, int64_t>>{{12, 5}, {7, 7}, {30, 2}}) {
    INFO(d << " x " << k);
    const Mat u0 = rounded(random_orthonormal(d, k, static_cast<uint64_t>(3 * d + k)));
    const at::Tensor u = to_tensor(u0, at::kFloat).requires_grad_();
    ss::StageOptimizer o(c, {u}, {ParamRole::kStiefel});
    const std::vector<double> lrs = {0.2, 0.1};  // scheduled rates of steps 1 and 2
    const std::vector<Mat> gs = {rounded(from_tensor(torch::randn({d, k}))),
                                 rounded(from_tensor(torch::randn({d, k}) * 2.0))};
    Mat ur = u0, mr = zeros(d, k), m_no_momentum;
    for (size_t t = 0; t < 2; ++t) {
      u.mutable_grad() = to_tensor(gs[t], at::kFloat);
      o.set_lr(lrs[t]);
      o.step();
      const Mat xi = tangent(ur, gs[t]);
      m_no_momentum = xi;
      const Mat m = tangent(ur, axpby(c.stiefel_momentum, mr, 1, xi));
      ur = rounded(polar(axpby(1, ur, -lrs[t] * c.stiefel_lr_scale, m)));
      mr = rounded(m);
    }
    const Mat got = from_tensor(u);
    CHECK(distance(got, ur) < 1e-6 * frobenius(ur));
    REQUIRE(o.state_tensors().size() == 1);
    CHECK(distance(from_tensor(o.state_tensors()[0]), mr) < 1e-6 * frobenius(mr));
    // Control: the second step without momentum lands elsewhere.
    CHECK(distance(mr, rounded(m_no_momentum)) > 1e-3 * frobenius(mr));
  }
}

TEST_CASE("Stiefel: minimising -trace(U^T A U) finds A's top-k eigenspace") {
  const int64_t d = 10, k = 3;
  const Mat q = random_orthonormal(d, d, 21);  // A's eigenvectors
  const std::vector<double> lambda = {3.0, 2.5, 2.0, 1.0, 0.8, 0.5, 0.3, 0.2, 0.1, 0.0};
  Mat a = zeros(d, d);  // q diag(lambda) q^T
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j)
      for (int64_t e = 0; e < d; ++e) a.at(i, j) += q.at(i, e) * lambda[e] * q.at(j, e);
  Mat top = zeros(d, k);  // the top-k eigenvectors
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < k; ++j) top.at(i, j) = q.at(i, j);
  const Mat target = matmul(top, transpose(top));
  const at::Tensor at_a = to_tensor(a, at::kFloat);
  const at::Tensor u = to_tensor(random_orthonormal(d, k, 22), at::kFloat).requires_grad_();
  const auto projector_gap = [&] {
    const Mat m = from_tensor(u);
    return distance(matmul(m, transpose(m)), target);
  };
  CHECK(projector_gap() > 0.5);
  ss::StageOptimizer o(config_of("adamw"), {u}, {ParamRole::kStiefel});
  o.set_lr(0.02);
  for (int step = 0; step < 400; ++step) {
    u.mutable_grad() = at_a.mm(u.detach()) * -2.0;  // the Euclidean gradient
    o.step();
  }
  CHECK(projector_gap() < 1e-3);
  const double f = -at::trace(u.detach().t().mm(at_a).mm(u.detach())).item<double>();
  CHECK(f == Approx(-(3.0 + 2.5 + 2.0)).epsilon(1e-5));
}

TEST_CASE("Stiefel: msign steps equal the double reference and ignore the gradient's scale") {
  slowpipe::config::OptimConfig c = config_of("adamw");
  c.stiefel_direction = "msign";
  c.stiefel_momentum = 0.0;
  const int64_t d = 12, k = 4;
  const Mat u0 = rounded(random_orthonormal(d, k, 31));
  const Mat g = rounded(from_tensor(torch::randn({d, k})));
  // The reference: D = P_U(polar(xi / ||xi||_F)), U <- polar(U - lr D).
  const Mat xi = tangent(u0, g);
  const double n = frobenius(xi);
  const Mat dir = tangent(u0, polar(axpby(1.0 / n, xi, 0, xi)));
  const Mat expect = polar(axpby(1, u0, -0.05, dir));
  std::vector<Mat> got;
  for (double scale : {1.0, 1e-4}) {  // a tiny gradient takes the same step
    const at::Tensor u = to_tensor(u0, at::kFloat).requires_grad_();
    ss::StageOptimizer o(c, {u}, {ParamRole::kStiefel});
    o.set_lr(0.05);
    u.mutable_grad() = to_tensor(g, at::kFloat) * scale;
    o.step();
    got.push_back(from_tensor(u));
    CHECK(orthonormality_error(u) < 1e-5);
  }
  CHECK(distance(got[0], expect) < 1e-6 * frobenius(expect));
  CHECK(distance(got[1], expect) < 1e-5 * frobenius(expect));
  // Control: the plain direction at the tiny scale barely moves U.
  const at::Tensor u = to_tensor(u0, at::kFloat).requires_grad_();
  c.stiefel_direction = "momentum";
  ss::StageOptimizer plain(c, {u}, {ParamRole::kStiefel});
  plain.set_lr(0.05);
  u.mutable_grad() = to_tensor(g, at::kFloat) * 1e-4;
  plain.step();
  CHECK(distance(from_tensor(u), u0) < 1e-3 * distance(expect, u0));
}

TEST_CASE("Stiefel: the other parameters step exactly as an optimizer given only them") {
  const std::vector<ParamRole> roles = {ParamRole::kHiddenMatrix, ParamRole::kStiefel,
                                        ParamRole::kOther, ParamRole::kEmbedding};
  for (const auto& name : slowpipe::config::optimizer_registry().names()) {
    INFO(name);
    torch::manual_seed(13);
    const std::vector<at::Tensor> all = {
        torch::randn({6, 4}).requires_grad_(),
        to_tensor(random_orthonormal(8, 3, 14), at::kFloat).requires_grad_(),
        torch::randn({5}).requires_grad_(), torch::randn({7, 3}).requires_grad_()};
    const std::vector<at::Tensor> only = detached_copies({all[0], all[2], all[3]});
    const std::vector<ParamRole> only_roles = {roles[0], roles[2], roles[3]};
    ss::StageOptimizer a(config_of(name), all, roles);
    ss::StageOptimizer b(config_of(name), only, only_roles);
    for (int step = 0; step < 4; ++step) {
      set_grads(all, step);
      set_grads(only, step);
      a.set_lr(0.01 / (step + 1));
      b.set_lr(0.01 / (step + 1));
      a.step();
      b.step();
    }
    REQUIRE(a.params().size() == all.size());  // clipping and zero_grad see every one
    for (size_t i = 0; i < all.size(); ++i) CHECK(a.params()[i].is_same(all[i]));
    CHECK(all[0].equal(only[0]));
    CHECK(all[2].equal(only[1]));
    CHECK(all[3].equal(only[2]));
    CHECK(orthonormality_error(all[1]) < 1e-5);
    CHECK(a.state_tensors().size() == b.state_tensors().size() + 1);  // + the Stiefel momentum
    CHECK(a.flops_per_step() == b.flops_per_step() + ss::StiefelStep::flops(all[1]));
    CHECK(a.memory_bytes_per_step() ==
          b.memory_bytes_per_step() + ss::StiefelStep::memory_bytes(all[1]));
  }
}

TEST_CASE("Stiefel: replicas exchanging momenta stay identical and follow the mean gradient") {
  const Mat u0 = rounded(random_orthonormal(9, 4, 31));
  std::vector<at::Tensor> us;
  std::vector<ss::StageOptimizer> os;
  for (int r = 0; r < 3; ++r) {  // two replicas and one fed their mean gradient
    us.push_back(to_tensor(u0, at::kFloat).requires_grad_());
    os.emplace_back(config_of("adamw"), std::vector<at::Tensor>{us.back()},
                    std::vector<ParamRole>{ParamRole::kStiefel});
  }
  torch::manual_seed(32);
  for (int step = 0; step < 3; ++step) {
    const at::Tensor g1 = torch::randn({9, 4}), g2 = torch::randn({9, 4});
    us[0].mutable_grad() = g1;
    us[1].mutable_grad() = g2;
    us[2].mutable_grad() = (g1 + g2) * 0.5;
    if (step == 0) {  // the warm-up: an ordinary step from the same gradient
      for (int r = 0; r < 3; ++r) us[r].mutable_grad() = g1;
      for (auto& o : os) o.step();
      continue;
    }
    REQUIRE(os[0].has_moments());
    const at::Tensor mean = (os[0].next_momentum() + os[1].next_momentum()) * 0.5;
    CHECK((mean - os[2].next_momentum()).abs().max().item<double>() < 1e-6);
    for (auto& o : os) o.step_with_momentum(mean);
  }
  CHECK(us[0].equal(us[1]));
  CHECK(us[0].equal(us[2]));
  CHECK(orthonormality_error(us[0]) < 1e-5);
}

TEST_CASE("Stiefel: a run resumes bitwise; archives without or with Stiefel state are refused") {
  const std::vector<ParamRole> roles = {ParamRole::kOther, ParamRole::kStiefel};
  for (const auto& name : slowpipe::config::optimizer_registry().names()) {
    INFO(name);
    torch::manual_seed(41);
    const std::vector<at::Tensor> pa = {
        torch::randn({4, 3}).requires_grad_(),
        to_tensor(random_orthonormal(6, 2, 42), at::kFloat).requires_grad_()};
    ss::StageOptimizer a(config_of(name), pa, roles);
    for (int step = 0; step < 2; ++step) {
      set_grads(pa, step);
      a.step();
    }
    const std::string bytes = archive_bytes(a);
    const std::vector<at::Tensor> pb = detached_copies(pa);
    ss::StageOptimizer b(config_of(name), pb, roles);
    load_bytes(b, bytes);
    for (int step = 2; step < 5; ++step) {
      set_grads(pa, step);
      set_grads(pb, step);
      a.set_lr(0.013 / step);  // as the engine does before every step
      b.set_lr(0.013 / step);
      a.step();
      b.step();
    }
    for (size_t i = 0; i < pa.size(); ++i) {
      INFO("parameter " << i);
      CHECK(pa[i].equal(pb[i]));
    }
    const auto sa = a.state_tensors(), sb = b.state_tensors();
    REQUIRE(sa.size() == sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      INFO("state tensor " << i);
      CHECK(sa[i].equal(sb[i]));
    }
    // The same first parameter without the Stiefel one: its archive lacks the
    // Stiefel state, and a stage without it refuses an archive that holds it.
    ss::StageOptimizer plain(config_of(name), detached_copies({pa[0]}));
    set_grads(plain.params(), 0);
    plain.step();
    CHECK_THROWS_WITH(load_bytes(b, archive_bytes(plain)), Catch::Contains("kStiefel"));
    CHECK_THROWS_AS(load_bytes(b, archive_bytes(plain)), slowpipe::DataError);
    CHECK_THROWS_AS(load_bytes(plain, bytes), slowpipe::DataError);
  }
}

TEST_CASE("Stiefel: a stage of Stiefel parameters only steps, saves and loads") {
  const at::Tensor u = to_tensor(random_orthonormal(5, 2, 51), at::kFloat).requires_grad_();
  ss::StageOptimizer o(config_of("muon"), {u}, {ParamRole::kStiefel});
  u.mutable_grad() = torch::ones({5, 2});
  o.set_lr(0.1);
  o.step();
  CHECK(o.has_moments());
  // p starts at optim.lr (1e-3) and must load the rate 0.1 with the momentum.
  const at::Tensor copy = u.detach().clone().requires_grad_();
  ss::StageOptimizer p(config_of("muon"), {copy}, {ParamRole::kStiefel});
  load_bytes(p, archive_bytes(o));
  u.mutable_grad() = torch::ones({5, 2});
  copy.mutable_grad() = torch::ones({5, 2});
  o.step();
  p.step();
  CHECK(u.equal(copy));
}

TEST_CASE("Stiefel: a parameter without a gradient is left as it is") {
  const at::Tensor u = to_tensor(random_orthonormal(6, 3, 61), at::kFloat).requires_grad_();
  const at::Tensor before = u.detach().clone();
  ss::StageOptimizer o(config_of("adamw"), {u}, {ParamRole::kStiefel});
  o.step();
  CHECK(u.equal(before));
  CHECK_FALSE(o.has_moments());
  CHECK(o.state_tensors().empty());
}

TEST_CASE("Stiefel: optim.stiefel_lr_scale and optim.stiefel_momentum refuse bad values") {
  slowpipe::config::OptimConfig c;
  slowpipe::OptionSet o;
  slowpipe::config::describe_options(c, o);
  CHECK(o.get("optim.stiefel_lr_scale") == "1");
  CHECK(o.get("optim.stiefel_momentum") == "0.9");
  CHECK_THAT(o.help_text(), Catch::Contains("optim.stiefel_lr_scale") &&
                                Catch::Contains("optim.stiefel_momentum"));
  for (const char* bad : {"0", "-1", "nan", "inf", "x"}) {
    INFO(bad);
    CHECK_THROWS_WITH(o.set("optim.stiefel_lr_scale", bad),
                      Catch::Contains("optim.stiefel_lr_scale"));
  }
  for (const char* bad : {"1", "-0.1", "1.5", "nan"}) {
    INFO(bad);
    CHECK_THROWS_WITH(o.set("optim.stiefel_momentum", bad),
                      Catch::Contains("optim.stiefel_momentum"));
  }
  CHECK_THROWS_AS(o.set("optim.stiefel_momentum", "1"), slowpipe::UsageError);
  o.set("optim.stiefel_lr_scale", "0.25");
  o.set("optim.stiefel_momentum", "0");
  CHECK(c.stiefel_lr_scale == 0.25);
  CHECK(c.stiefel_momentum == 0.0);
}
