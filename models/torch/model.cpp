// Model-wide helpers: blocks' parameter roles, parameter lists, a stage's
// forward with the model's boundary map around it, and the two training losses.
#include "models/torch/model.h"

#include <torch/torch.h>

#include <stdexcept>

#include "models/torch/internal/autocast.h"

namespace slowpipe::models {

void Block::set_role(const at::Tensor& p, ParamRole role) {
  for (const auto& item : named_parameters()) {
    if (item.value().unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) {
      roles_.emplace_back(item.key(), role);
      return;
    }
  }
  throw std::invalid_argument("Block::set_role: not a parameter of block " + name());
}

std::vector<ParamRole> Block::parameter_roles() const {
  std::vector<ParamRole> out;
  for (const auto& item : named_parameters()) {
    ParamRole role = ParamRole::kOther;
    for (const auto& [name, r] : roles_) {
      if (name == item.key()) role = r;
    }
    out.push_back(role);
  }
  return out;
}

std::vector<at::Tensor> Model::parameters() const {
  std::vector<at::Tensor> out;
  for (const auto& b : blocks) {
    for (const auto& p : b->parameters()) out.push_back(p);
  }
  return out;
}

int64_t Model::parameter_count(size_t begin, size_t end) const {
  int64_t n = 0;
  for (size_t i = begin; i < end && i < blocks.size(); ++i) {
    for (const auto& p : blocks[i]->parameters()) n += p.numel();
  }
  return n;
}

double Model::forward_flops_per_sample(size_t begin, size_t end) const {
  double flops = 0;
  for (size_t i = begin; i < end && i < blocks.size(); ++i) {
    flops += blocks[i]->forward_flops_per_sample();
  }
  return flops;
}

const BoundaryMap* boundary_at(const Model& model, size_t block) {
  if (model.boundary) return model.boundary.get();
  const auto it = model.bottlenecks.find(block);
  return it == model.bottlenecks.end() ? nullptr : it->second.get();
}

uint64_t side_bytes(const Model& model, size_t cut, const at::Tensor& inputs) {
  const BoundaryMap* map = boundary_at(model, cut);
  return map ? map->side_bytes(inputs) : 0;
}

at::Tensor forward_stage(const Model& model, size_t begin, size_t end, const at::Tensor& x,
                         const at::Tensor& inputs) {
  const AutocastScope autocast(model.compute_dtype, x.device());
  const BoundaryMap* in = begin > 0 ? boundary_at(model, begin) : nullptr;
  at::Tensor h = in ? in->expand(x, inputs) : x;
  for (size_t b = begin; b < end; ++b) {
    if (b > begin) {
      const auto it = model.bottlenecks.find(b);
      if (it != model.bottlenecks.end())
        h = it->second->expand(it->second->reduce(h, inputs), inputs);
    }
    h = model.blocks[b]->forward(h);
  }
  const BoundaryMap* out = end < model.blocks.size() ? boundary_at(model, end) : nullptr;
  if (out) h = out->reduce(h, inputs);
  // Under autocast a block may end in bf16: what crosses a cut, and the
  // logits the loss reads, are fp32.
  return h.scalar_type() == at::kBFloat16 ? h.to(at::kFloat) : h;
}

void Model::train(bool on) const {
  for (const auto& b : blocks) b->train(on);
}

at::Tensor loss(Task task, const at::Tensor& output, const at::Tensor& targets) {
  if (task == Task::kLanguageModel) {
    // output [B, T, V], targets [B, T]
    const int64_t v = output.size(-1);
    return torch::nn::functional::cross_entropy(output.reshape({-1, v}), targets.reshape({-1}));
  }
  // output [B, C], targets [B]
  return torch::nn::functional::cross_entropy(output, targets);
}

int64_t correct(Task task, const at::Tensor& output, const at::Tensor& targets) {
  (void)task;  // argmax over the last dimension works for both shapes
  return output.argmax(-1).eq(targets).sum().item<int64_t>();
}

}  // namespace slowpipe::models
