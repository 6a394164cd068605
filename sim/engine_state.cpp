// Saving and restoring everything a PipelineEngine carries from one step to the
// next, for bitwise resume (docs/reliability.md): every replica's parameters
// and buffers, which parameters hold a gradient tensor, every stage optimizer's
// state (moments, step counts) and every channel's feedback state (EF residuals,
// EF21 copies, AQ-SGD buffers, codec random streams).
#include <torch/serialize.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "common/errors.h"
#include "sim/engine.h"
#include "sim/internal/engine_replica.h"

namespace slowpipe::sim {
namespace {

using TensorMap = std::map<std::string, at::Tensor>;

std::string block_key(int replica, size_t block, const std::string& name) {
  return "r" + std::to_string(replica) + ".b" + std::to_string(block) + "." + name;
}

// Calls f(key, tensor) for every parameter and buffer of a replica's model.
template <class F>
void for_each_model_tensor(const models::Model& model, int replica, F&& f) {
  for (size_t b = 0; b < model.blocks.size(); ++b) {
    for (const auto& p : model.blocks[b]->named_parameters(/*recurse=*/true)) {
      f(block_key(replica, b, "p." + p.key()), p.value());
    }
    for (const auto& p : model.blocks[b]->named_buffers(/*recurse=*/true)) {
      f(block_key(replica, b, "buf." + p.key()), p.value());
    }
  }
}

template <class F>
void for_each_channel(const std::vector<std::unique_ptr<compressors::Channel>>& list,
                      const std::string& prefix, F&& f) {
  for (size_t i = 0; i < list.size(); ++i) f(*list[i], prefix + std::to_string(i) + ".");
}

}  // namespace

void PipelineEngine::save_state(torch::serialize::OutputArchive& archive) const {
  torch::NoGradGuard no_grad;
  TensorMap channels;
  for (int r = 0; r < replicas(); ++r) {
    const Replica& rep = *replicas_[r];
    for_each_model_tensor(rep.model, r, [&](const std::string& key, const at::Tensor& t) {
      archive.write("model." + key, t.detach().cpu());
    });
    std::vector<uint8_t> has_grad;
    for (const auto& params : rep.stage_params) {
      for (const auto& p : params) has_grad.push_back(p.grad().defined() ? 1 : 0);
    }
    archive.write("grad_defined.r" + std::to_string(r),
                  torch::tensor(std::vector<int64_t>(has_grad.begin(), has_grad.end())));
    for (size_t s = 0; s < rep.optimizers.size(); ++s) {
      torch::serialize::OutputArchive sub;
      rep.optimizers[s].save(sub);
      archive.write("optim.r" + std::to_string(r) + ".s" + std::to_string(s), sub);
    }
    const std::string rp = "r" + std::to_string(r) + ".";
    const auto save = [&](const compressors::Channel& c, const std::string& prefix) {
      c.save_state(prefix, channels);
    };
    for_each_channel(rep.fw, rp + "fw", save);
    for_each_channel(rep.bw, rp + "bw", save);
    for_each_channel(rep.grad, rp + "grad", save);
    for_each_channel(rep.momentum, rp + "momentum", save);
    for_each_channel(rep.momentum_server, rp + "momentum_server", save);
  }
  torch::serialize::OutputArchive ch;
  for (const auto& [key, t] : channels) ch.write(key, t);
  archive.write("channels", ch);
}

void PipelineEngine::load_state(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  const auto read = [&archive](const std::string& key) {
    at::Tensor t;
    if (!archive.try_read(key, t)) {
      throw DataError("the checkpoint has no entry '" + key + "': it was written for another run");
    }
    return t;
  };
  // Check every tensor before changing anything.
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (destination, source)
  for (int r = 0; r < replicas(); ++r) {
    for_each_model_tensor(replicas_[r]->model, r, [&](const std::string& key, const at::Tensor& t) {
      const at::Tensor src = read("model." + key);
      if (src.sizes() != t.sizes() || src.scalar_type() != t.scalar_type()) {
        throw DataError("the checkpoint's '" + key + "' has another shape or type than this run's");
      }
      copies.emplace_back(t, src);
    });
  }
  torch::serialize::InputArchive ch;
  if (!archive.try_read("channels", ch)) {
    throw DataError("the checkpoint holds no channel state");
  }
  TensorMap channels;
  for (const auto& key : ch.keys()) {
    at::Tensor t;
    ch.read(key, t);
    channels[key] = t;
  }
  for (auto& [dst, src] : copies) dst.copy_(src);
  for (int r = 0; r < replicas(); ++r) {
    Replica& rep = *replicas_[r];
    const at::Tensor has_grad = read("grad_defined.r" + std::to_string(r));
    int64_t i = 0;
    for (auto& params : rep.stage_params) {
      for (auto& p : params) {
        if (i >= has_grad.numel()) throw DataError("the checkpoint's gradient flags do not fit");
        // A zero gradient where the uninterrupted run held one: the optimizers
        // skip parameters without a gradient, so the flag matters.
        if (has_grad[i].item<int64_t>() != 0) p.mutable_grad() = torch::zeros_like(p);
        ++i;
      }
    }
    for (size_t s = 0; s < rep.optimizers.size(); ++s) {
      torch::serialize::InputArchive sub;
      const std::string key = "optim.r" + std::to_string(r) + ".s" + std::to_string(s);
      if (!archive.try_read(key, sub)) throw DataError("the checkpoint has no entry '" + key + "'");
      rep.optimizers[s].load(sub);
    }
    const std::string rp = "r" + std::to_string(r) + ".";
    const auto load = [&](compressors::Channel& c, const std::string& prefix) {
      c.load_state(prefix, channels);
    };
    for_each_channel(rep.fw, rp + "fw", load);
    for_each_channel(rep.bw, rp + "bw", load);
    for_each_channel(rep.grad, rp + "grad", load);
    for_each_channel(rep.momentum, rp + "momentum", load);
    for_each_channel(rep.momentum_server, rp + "momentum_server", load);
  }
}

}  // namespace slowpipe::sim
