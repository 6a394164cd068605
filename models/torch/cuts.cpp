// Cut resolution: validation of user cuts, min-max balancing by dynamic
// programming over block costs, and per-block timing on a probe batch.
#include "models/torch/cuts.h"

#include <torch/torch.h>

#include <chrono>
#include <limits>

#include "common/errors.h"

namespace slowpipe::models {

std::vector<double> block_parameter_costs(const Model& model) {
  std::vector<double> costs;
  for (size_t i = 0; i < model.blocks.size(); ++i) {
    costs.push_back(static_cast<double>(model.parameter_count(i, i + 1)));
  }
  return costs;
}

std::vector<double> measure_block_times_s(const Model& model, const Batch& probe, int repeats) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> best(model.blocks.size(), std::numeric_limits<double>::infinity());
  // Save training flags and gradients, measure, restore.
  std::vector<bool> training;
  std::vector<at::Tensor> params, grads;
  for (const auto& b : model.blocks) {
    training.push_back(b->is_training());
    b->eval();
    for (auto& p : b->parameters()) {
      params.push_back(p);
      grads.push_back(p.grad());
      p.mutable_grad() = at::Tensor();  // backward would accumulate into it in place
    }
  }
  torch::AutoGradMode grad_mode(true);
  for (int r = 0; r < std::max(1, repeats) + 1; ++r) {  // first round warms up
    at::Tensor x = probe.inputs;
    for (size_t i = 0; i < model.blocks.size(); ++i) {
      at::Tensor in = x.detach();
      if (in.is_floating_point()) in.requires_grad_(true);
      const auto t0 = Clock::now();
      at::Tensor y = model.blocks[i]->forward(in);
      torch::autograd::backward({y}, {torch::ones_like(y)});
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r > 0) best[i] = std::min(best[i], s);
      x = y.detach();
    }
  }
  for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i];
  for (size_t i = 0; i < model.blocks.size(); ++i) model.blocks[i]->train(training[i]);
  return best;
}

std::vector<size_t> balance_cuts(const std::vector<double>& costs, int stages) {
  const size_t n = costs.size();
  const auto s_count = static_cast<size_t>(stages);
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  // cost[s][j]: best max-stage cost of the first j blocks in s stages; from[s][j]: start of stage
  // s.
  std::vector<std::vector<double>> cost(s_count + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(s_count + 1, std::vector<size_t>(n + 1, 0));
  cost[0][0] = 0.0;
  for (size_t s = 1; s <= s_count; ++s) {
    for (size_t j = s; j <= n; ++j) {
      for (size_t i = s - 1; i < j; ++i) {
        const double c = std::max(cost[s - 1][i], prefix[j] - prefix[i]);
        if (c < cost[s][j]) {  // strict: keeps the earliest cut on ties
          cost[s][j] = c;
          from[s][j] = i;
        }
      }
    }
  }
  std::vector<size_t> cuts(s_count + 1, 0);
  cuts[s_count] = n;
  for (size_t s = s_count; s >= 1; --s) cuts[s - 1] = from[s][cuts[s]];
  return cuts;
}

namespace {

// pipeline.cuts as given: S-1 strictly increasing blocks in [1, n-1], none
// past model.max_cut; returns {0, cuts..., n}.
std::vector<size_t> user_cuts_checked(const Model& model, int stages,
                                      const std::vector<int64_t>& user_cuts) {
  const auto n = static_cast<int64_t>(model.blocks.size());
  if (static_cast<int64_t>(user_cuts.size()) != stages - 1) {
    throw UsageError("pipeline.cuts has " + std::to_string(user_cuts.size()) +
                     " entries; pipeline.stages=" + std::to_string(stages) + " needs " +
                     std::to_string(stages - 1) + " (the blocks where stages 1.." +
                     std::to_string(stages - 1) + " begin)");
  }
  std::vector<size_t> cuts = {0};
  int64_t prev = 0;
  for (int64_t c : user_cuts) {
    if (c < 1 || c > n - 1) {
      throw UsageError("pipeline.cuts: cut " + std::to_string(c) + " is outside [1, " +
                       std::to_string(n - 1) + "] (model '" + model.name + "' has " +
                       std::to_string(n) + " blocks)");
    }
    if (model.max_cut != 0 && c > static_cast<int64_t>(model.max_cut)) {
      throw UsageError("pipeline.cuts: cut " + std::to_string(c) +
                       " would send the output of block " + std::to_string(c - 1) +
                       ", which model '" + model.name +
                       "' leaves outside its subspace (the last transformer block is full-rank, "
                       "as in the record); cuts must be at most " +
                       std::to_string(model.max_cut));
    }
    if (c <= prev) {
      throw UsageError("pipeline.cuts must be strictly increasing (got " + std::to_string(c) +
                       " after " + std::to_string(prev) + ")");
    }
    cuts.push_back(static_cast<size_t>(c));
    prev = c;
  }
  cuts.push_back(static_cast<size_t>(n));
  return cuts;
}

// balance_cuts over `costs`, keeping the blocks from model.max_cut on in the
// last stage (they are balanced as one block).
std::vector<size_t> balance_within(const Model& model, const std::vector<double>& costs,
                                   int stages) {
  if (model.max_cut == 0 || model.max_cut + 1 >= costs.size()) return balance_cuts(costs, stages);
  if (stages > static_cast<int>(model.max_cut) + 1) {
    throw UsageError("pipeline.stages=" + std::to_string(stages) + " exceeds the " +
                     std::to_string(model.max_cut + 1) + " stages model '" + model.name +
                     "' can be cut into (its blocks from " + std::to_string(model.max_cut) +
                     " on stay in the last stage)");
  }
  std::vector<double> merged(costs.begin(), costs.begin() + static_cast<int64_t>(model.max_cut));
  double tail = 0;
  for (size_t i = model.max_cut; i < costs.size(); ++i) tail += costs[i];
  merged.push_back(tail);
  std::vector<size_t> cuts = balance_cuts(merged, stages);
  cuts.back() = costs.size();
  return cuts;
}

}  // namespace

std::vector<size_t> resolve_cuts(const Model& model, int stages,
                                 const std::vector<int64_t>& user_cuts, const std::string& balance,
                                 const Batch* probe) {
  const auto n = static_cast<int64_t>(model.blocks.size());
  if (stages < 1) {
    throw UsageError("pipeline.stages=" + std::to_string(stages) + " must be at least 1");
  }
  if (stages > n) {
    throw UsageError("pipeline.stages=" + std::to_string(stages) + " exceeds the " +
                     std::to_string(n) + " blocks of model '" + model.name +
                     "' (every stage needs at least one block)");
  }
  if (!user_cuts.empty()) return user_cuts_checked(model, stages, user_cuts);
  std::vector<double> costs;
  if (balance == "params") {
    costs = block_parameter_costs(model);
  } else if (balance == "time") {
    if (probe == nullptr) throw UsageError("pipeline.balance=time needs a probe batch");
    costs = measure_block_times_s(model, *probe);
  } else {
    throw UsageError("bad value for 'pipeline.balance': '" + balance + "' (expected params|time)");
  }
  return balance_within(model, costs, stages);
}

}  // namespace slowpipe::models
