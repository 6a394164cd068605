// Muon (optim.name = muon): momentum orthogonalised by a Newton-Schulz
// iteration for the hidden weight matrices, AdamW for every other parameter,
// each AdamW group at its own rate, after Keller Jordan's Muon and Protocol
// NanoGPT's train_gpt.py. The update rules, the constants and where each one
// comes from are in docs/optimizers.md; the roles (which parameters are hidden
// matrices) are declared by the model (models/param_role.h), never guessed.
//
// Per hidden matrix p with gradient g and momentum m (mu = optim.muon_momentum):
//   m <- m + (1 - mu)(g - m);  u <- g + mu (m - g)            (Nesterov)
//   O <- Newton-Schulz(u) x sqrt(max(1, rows / cols))
//   p <- p (1 - lr x optim.muon_weight_decay) - lr x O
// optim.muon_variant picks the iteration: `benchmark` (train_gpt.py:
// coefficients 2, -1.5, 0.5, 12 steps) or `canonical` (KellerJordan/Muon:
// 3.4445, -4.7750, 2.0315, 5 steps). Every other parameter: AdamW (optim.beta1,
// optim.beta2, eps 1e-10, decoupled optim.weight_decay) at
// optim.muon_embed_lr, optim.muon_head_lr or optim.muon_scalar_lr by role.
// The rates follow the schedule: a group's rate is its peak x (scheduled lr /
// optim.lr); the hidden matrices' is the scheduled lr itself.
//
// Numerics: the sources run the iteration in bfloat16 on a GPU. Here every
// update is computed in double from the stored float values and rounded once
// when stored (parameter, momentum, second moment), so that the result equals
// a double-precision reference to about 1e-6 relative even where the
// iteration amplifies rounding (rank-deficient gradients).
//
// State per parameter: a step count, the first moment (the momentum), and for
// AdamW parameters the second moment; saved with this file's own keys
// (`muon/...`) in the resume archive. The momentum exchange
// (compress.grad_sync = momentum) exchanges the first moment; with the
// exchanged mean M and the old momentum m0, a hidden matrix's Nesterov input
// is u = (1 + mu) M - mu m0 (the mean gradient's, exactly), AdamW freezes its
// second moment as adamw.cpp does. Step cost: the elementwise part (7 tensors,
// 10 FLOPs per element, as AdamW); the iteration's matrix products are left
// out of the analytic compute model.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "sim/internal/optimizer_impl.h"

namespace slowpipe::sim {
namespace {

using models::ParamRole;

// X <- a X + (b A + c A A) X with A = X X^T, `steps` times (docs/optimizers.md).
struct NewtonSchulz {
  double a, b, c;
  int steps;
};
// Protocol NanoGPT, train_gpt.py, zeropower_via_newtonschulz5.
constexpr NewtonSchulz kBenchmarkIteration{2.0, -1.5, 0.5, 12};
// KellerJordan/Muon, muon.py, zeropower_via_newtonschulz5 with ns_steps = 5.
constexpr NewtonSchulz kCanonicalIteration{3.4445, -4.7750, 2.0315, 5};
constexpr double kNormEps = 1e-7;   // X / (||X||_F + 1e-7), both sources
constexpr double kAdamEps = 1e-10;  // the AdamW groups' eps, both sources

// u [R, C] in double -> Newton-Schulz(u) [R, C]: run on the wide orientation
// (R <= C), started from u / (||u||_F + 1e-7) so every singular value is <= 1.
at::Tensor orthogonalize(const at::Tensor& u, const NewtonSchulz& ns) {
  const bool tall = u.size(0) > u.size(1);
  at::Tensor x = tall ? u.t() : u;  // [r, c], r <= c
  x = x / (x.norm().item<double>() + kNormEps);
  for (int i = 0; i < ns.steps; ++i) {
    const at::Tensor a = x.mm(x.t());                // [r, r]
    const at::Tensor b = a * ns.b + a.mm(a) * ns.c;  // [r, r]
    x = x * ns.a + b.mm(x);                          // [r, c]
  }
  return tall ? x.t().contiguous() : x;
}

// The scheduled rate, which StageOptimizer::set_lr writes into the one group.
struct MuonRate : torch::optim::OptimizerCloneableOptions<MuonRate> {
  explicit MuonRate(double lr = 0) : lr_(lr) {}
  double get_lr() const override { return lr_; }
  void set_lr(const double lr) override { lr_ = lr; }
  double lr_;
};

// One parameter's state; step 0: none yet.
struct Slot {
  ParamRole role = ParamRole::kOther;
  int64_t step = 0;
  at::Tensor moment;  // p's shape and dtype
  at::Tensor second;  // AdamW parameters only
};

class MuonSteps : public torch::optim::Optimizer {
 public:
  MuonSteps(const config::OptimConfig& c, const std::vector<at::Tensor>& params,
            const std::vector<ParamRole>& roles)
      : torch::optim::Optimizer(params, std::make_unique<MuonRate>(c.lr)),
        config_(c),
        ns_(c.muon_variant == "canonical" ? kCanonicalIteration : kBenchmarkIteration),
        params_(params) {
    for (size_t i = 0; i < params.size(); ++i) {
      if (roles[i] == ParamRole::kHiddenMatrix && params[i].dim() < 2) {
        throw std::logic_error("muon: a hidden matrix with fewer than 2 dimensions");
      }
      slots_.push_back(Slot{roles[i], 0, {}, {}});
      index_[params[i].unsafeGetTensorImpl()] = i;
    }
  }

  at::Tensor step(LossClosure /*closure*/ = nullptr) override {
    torch::NoGradGuard no_grad;
    const double lr = rate();
    for (size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor& p = params_[i];
      const at::Tensor g = p.grad().defined() ? p.grad().to(at::kDouble)
                                              : at::zeros_like(p, p.options().dtype(at::kDouble));
      Slot& s = slots_[i];
      if (s.step == 0) start(s, p);
      const double beta = beta_of(s);
      const at::Tensor m = lerp(s.moment, g, 1.0 - beta);  // double, p's shape
      if (s.role == ParamRole::kHiddenMatrix) {
        hidden_step(p, s, m, g + (m - g) * beta, lr);
      } else {
        adamw_step(p, s, m, lerp(s.second, g * g, 1.0 - config_.beta2), lr);
      }
    }
    return {};
  }

  // The momentum exchange (OptimizerImpl): see the file's head.
  const Slot& slot(const at::Tensor& p) const {
    return slots_.at(index_.at(p.unsafeGetTensorImpl()));
  }
  Slot& slot(const at::Tensor& p) { return slots_.at(index_.at(p.unsafeGetTensorImpl())); }
  double beta_of(const Slot& s) const {
    return s.role == ParamRole::kHiddenMatrix ? mu_of(s) : config_.beta1;
  }
  // optim.muon_momentum, or, with optim.muon_momentum_warmup = W > 0, the
  // ReparamSSN record's ramp from optim.muon_momentum_start to it over the
  // first W steps of this parameter (docs/optimizers.md).
  double mu_of(const Slot& s) const {
    const double end = config_.muon_momentum;
    if (config_.muon_momentum_warmup <= 0) return end;
    const double f = std::min(
        1.0, static_cast<double>(s.step) / static_cast<double>(config_.muon_momentum_warmup));
    return config_.muon_momentum_start + (end - config_.muon_momentum_start) * f;
  }
  void step_with_moment(const at::Tensor& p, const at::Tensor& mean, double lr) {
    Slot& s = slot(p);
    const at::Tensor m = mean.to(at::kDouble);
    if (s.role == ParamRole::kHiddenMatrix) {
      const double mu = mu_of(s);
      hidden_step(p, s, m, m * (1.0 + mu) - s.moment.to(at::kDouble) * mu, lr);
    } else {
      adamw_step(p, s, m, s.second.to(at::kDouble), lr);
    }
  }

  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  double rate() const { return param_groups().front().options().get_lr(); }

  // A group's rate at scheduled rate `lr`: its peak x lr / optim.lr.
  double group_rate(ParamRole role, double lr) const {
    if (role == ParamRole::kHiddenMatrix) return lr;
    const double peak = role == ParamRole::kEmbedding ? config_.muon_embed_lr
                        : role == ParamRole::kHead    ? config_.muon_head_lr
                                                      : config_.muon_scalar_lr;
    return config_.lr > 0 ? peak * (lr / config_.lr) : 0.0;
  }

  static void start(Slot& s, const at::Tensor& p) {
    s.moment = at::zeros_like(p);
    if (s.role != ParamRole::kHiddenMatrix) s.second = at::zeros_like(p);
  }

  // a + w (b - a) in double
  static at::Tensor lerp(const at::Tensor& a, const at::Tensor& b, double w) {
    const at::Tensor ad = a.to(at::kDouble);
    return ad + (b.to(at::kDouble) - ad) * w;
  }

  // m: the new momentum, u: the Nesterov input (both double, p's shape).
  void hidden_step(const at::Tensor& p, Slot& s, const at::Tensor& m, const at::Tensor& u,
                   double lr) {
    s.step += 1;
    s.moment.copy_(m);
    const at::Tensor u2 = u.reshape({u.size(0), -1});  // [rows, cols]
    const double rows = static_cast<double>(u2.size(0)), cols = static_cast<double>(u2.size(1));
    const at::Tensor o = orthogonalize(u2, ns_) * std::sqrt(std::max(1.0, rows / cols));
    const at::Tensor pd = p.to(at::kDouble) * (1.0 - lr * config_.muon_weight_decay);
    p.copy_(pd - o.view(p.sizes()) * lr);
  }

  // m, v: the new first and second moments (double, p's shape).
  void adamw_step(const at::Tensor& p, Slot& s, const at::Tensor& m, const at::Tensor& v,
                  double scheduled_lr) {
    const double lr = group_rate(s.role, scheduled_lr);
    s.step += 1;
    s.moment.copy_(m);
    s.second.copy_(v);
    const double t = static_cast<double>(s.step);
    const double bc1 = 1.0 - std::pow(config_.beta1, t), bc2 = 1.0 - std::pow(config_.beta2, t);
    const at::Tensor update = (m / bc1) / ((v / bc2).sqrt() + kAdamEps);
    const at::Tensor pd = p.to(at::kDouble) * (1.0 - lr * config_.weight_decay);
    p.copy_(pd - update * lr);
  }

  config::OptimConfig config_;
  NewtonSchulz ns_;
  std::vector<at::Tensor> params_;
  std::vector<Slot> slots_;                        // per parameter, in order
  std::unordered_map<const void*, size_t> index_;  // TensorImpl -> slot
};

at::Tensor scalar_tensor(double x) {
  return torch::tensor(x, torch::kDouble);
}

void MuonSteps::save(torch::serialize::OutputArchive& archive) const {
  archive.write("muon/lr", scalar_tensor(rate()), /*is_buffer=*/true);
  archive.write("muon/count", scalar_tensor(static_cast<double>(slots_.size())), true);
  for (size_t i = 0; i < slots_.size(); ++i) {
    const std::string key = "muon/" + std::to_string(i) + "/";
    const Slot& s = slots_[i];
    archive.write(key + "step", torch::tensor(s.step, torch::kLong), true);
    if (s.moment.defined()) archive.write(key + "moment", s.moment, true);
    if (s.second.defined()) archive.write(key + "second", s.second, true);
  }
}

// Throws c10::Error (StageOptimizer::load: DataError) when the archive does
// not fit these parameters; nothing changes then.
void MuonSteps::load(torch::serialize::InputArchive& archive) {
  at::Tensor lr, count;
  archive.read("muon/lr", lr, true);
  archive.read("muon/count", count, true);
  TORCH_CHECK(count.item<double>() == static_cast<double>(slots_.size()),
              "muon: the archive holds another number of parameters");
  std::vector<Slot> loaded = slots_;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const std::string key = "muon/" + std::to_string(i) + "/";
    Slot& s = loaded[i];
    at::Tensor step;
    archive.read(key + "step", step, true);
    s.step = step.item<int64_t>();
    s.moment = s.second = at::Tensor();
    if (s.step == 0) continue;
    at::Tensor m, v;
    archive.read(key + "moment", m, true);
    TORCH_CHECK(m.sizes() == params_[i].sizes(), "muon: a moment of another shape");
    s.moment = m.to(params_[i].options()).clone();
    if (s.role != ParamRole::kHiddenMatrix) {
      archive.read(key + "second", v, true);
      TORCH_CHECK(v.sizes() == params_[i].sizes(), "muon: a second moment of another shape");
      s.second = v.to(params_[i].options()).clone();
    }
  }
  slots_ = std::move(loaded);
  for (auto& group : param_groups()) group.options().set_lr(lr.item<double>());
}

class Muon : public OptimizerImpl {
 public:
  Muon(const config::OptimConfig& c, const std::vector<at::Tensor>& params,
       const std::vector<ParamRole>& roles)
      : opt_(c, params, roles) {}

  torch::optim::Optimizer& torch_optimizer() override { return opt_; }

  void append_state(const at::Tensor& p, std::vector<at::Tensor>& out) const override {
    const Slot& s = opt_.slot(p);
    if (s.step == 0) return;
    out.push_back(s.moment);
    if (s.second.defined()) out.push_back(s.second);
  }

  bool has_moment(const at::Tensor& p) const override { return opt_.slot(p).step > 0; }

  // beta x m + (1 - beta) x g, beta: optim.muon_momentum or optim.beta1
  at::Tensor next_moment(const at::Tensor& p, const at::Tensor& g) const override {
    const Slot& s = opt_.slot(p);
    const double beta = opt_.beta_of(s);
    const at::Tensor md = s.moment.to(at::kDouble);
    return (md + (g.to(at::kDouble) - md) * (1.0 - beta)).to(p.dtype()).reshape({-1});
  }

  void step_with_moment(const at::Tensor& p, const at::Tensor& m, double lr) override {
    opt_.step_with_moment(p, m, lr);
  }

 private:
  MuonSteps opt_;
};

}  // namespace

OptimizerEntry muon_optimizer() {
  return {"muon",
          [](const config::OptimConfig& c, const std::vector<at::Tensor>& params,
             const std::vector<models::ParamRole>& roles) {
            return std::unique_ptr<OptimizerImpl>(std::make_unique<Muon>(c, params, roles));
          },
          [](const config::OptimConfig&) {
            return OptimizerStepCost{7, 10};
          },
          [](const config::OptimConfig&) { return std::string(); }};
}

}  // namespace slowpipe::sim
