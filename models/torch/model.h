// A model is an ordered list of blocks that can be cut into pipeline stages.
// Stage s runs blocks [cuts[s], cuts[s+1]) on whatever the previous stage sent
// (models/torch/cuts.h: cuts = [0, c1, ..., n_blocks]).
// The last block produces the model output (logits); `loss` turns output and
// targets into the training loss. Building the whole model once from a seed and
// then cutting it makes every split start from identical parameters.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/torch/param_role.h"
#include "netmodel/op_work.h"

namespace slowpipe::models {

enum class Task { kLanguageModel, kClassification };

class Block : public torch::nn::Module {
 public:
  Block() = default;
  // `kind` names the block type ("TransformerBlock"); Module::name() returns it.
  explicit Block(const std::string& kind) : torch::nn::Module(kind) {}
  // Shape legends are the implementer's: see each model's file.
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  // Forward FLOPs for one sample (backward is taken as 2x by the timing model).
  virtual double forward_flops_per_sample() const = 0;
  // Adds this block's forward on `samples` samples to `work`, kernel class by
  // kernel class (netmodel/op_work.h), for the shape-aware clock
  // (docs/compute-clock.md); false when the block does not describe itself
  // (its FLOPs then stand for it).
  virtual bool add_forward_work(netmodel::OpWork& /*work*/, int64_t /*samples*/) const {
    return false;
  }
  // The role of each of parameters(), in that order: what set_role declared,
  // kOther for the rest (models/param_role.h).
  std::vector<ParamRole> parameter_roles() const;

 protected:
  // Declares the role of `p`, a parameter of this block or of a registered
  // submodule (std::invalid_argument otherwise). Roles are kept by parameter
  // name, so they survive moves between devices.
  void set_role(const at::Tensor& p, ParamRole role);

 private:
  std::vector<std::pair<std::string, ParamRole>> roles_;  // (parameter name, role)
};
using BlockPtr = std::shared_ptr<Block>;

// What crosses a stage boundary, when a model decides it (default: the block
// output itself). A model whose activations at every cut lie in a known
// affine subspace (models/torch/internal/subspace.h) sends only their coordinates: `reduce`
// maps the output leaving a stage to what crosses, `expand` rebuilds the next
// stage's input from what arrived and the model's inputs (the token ids, which
// every stage has). Both are differentiable, so the gradient that crosses back
// is the gradient of what crossed. expand(reduce(h, in), in) == h to float
// rounding for every h the model can produce at a cut.
class BoundaryMap {
 public:
  virtual ~BoundaryMap() = default;
  virtual at::Tensor reduce(const at::Tensor& output, const at::Tensor& inputs) const = 0;
  virtual at::Tensor expand(const at::Tensor& sent, const at::Tensor& inputs) const = 0;
  // Bytes each message (forward and backward) carries besides the tensor
  // `reduce` returns, for the samples whose model inputs are `inputs`: the
  // token ids of a map that sends them (counted; every stage already has them).
  virtual uint64_t side_bytes(const at::Tensor& /*inputs*/) const { return 0; }
  // True when the map has trainable parameters that the stages on both sides
  // of the cut read (a learned projection, models/torch/internal/bottleneck.h):
  // one process sums their gradient from both sides; a distributed run sends
  // the reader's contributions to their owner (distributed/dist_shared.cpp).
  virtual bool shared_parameters() const { return false; }
  // Those parameters (owned by the block in front of the cut); none by default.
  // A split backward's weight pass on the receiving side must reach them too.
  virtual std::vector<at::Tensor> parameters() const { return {}; }
};

struct Model {
  std::string name;  // registry name: "gpt", "cnn", "mlp"
  Task task = Task::kClassification;
  std::vector<BlockPtr> blocks;
  // The config keys that fix the parameters' shapes and meaning, with their
  // values ({"model.d_model", "128"}, ...): set by build_model, written into
  // checkpoints and compared when one is loaded. Empty for a hand-built model.
  std::vector<std::pair<std::string, std::string>> shape_config;
  // Null: block outputs cross the cuts as they are (every model but a
  // subspace-constrained GPT).
  std::shared_ptr<const BoundaryMap> boundary;
  // 0: a stage may begin at any block. Otherwise no stage may begin after block
  // `max_cut` (the blocks from it on write outside what `boundary` can reduce:
  // the full-rank last block of protocol-gpt's subspace form ends the model).
  size_t max_cut = 0;
  // Learned bottlenecks applied through a map (model.bottleneck = learned:...):
  // bottlenecks[b] sits in front of block b. A cut there sends what the map
  // reduces; inside a stage the block output goes through reduce and expand.
  // Empty for every other model (ResBM's bottlenecks are inside its blocks).
  std::map<size_t, std::shared_ptr<const BoundaryMap>> bottlenecks;
  // What forward_stage computes in (run.dtype): kFloat, or kBFloat16 for
  // autocast (bf16 matmuls, fp32 parameters; internal/autocast.h). Set by the
  // engine after build_model; a stage's output leaves in fp32 either way.
  at::ScalarType compute_dtype = at::kFloat;
  // Every parameter of every block, in block order.
  std::vector<at::Tensor> parameters() const;
  // Number of scalar parameters of blocks [begin, end).
  int64_t parameter_count(size_t begin, size_t end) const;
  // Sum of forward_flops_per_sample() over blocks [begin, end).
  double forward_flops_per_sample(size_t begin, size_t end) const;
  // Training (dropout on) or evaluation mode for every block.
  void train(bool on = true) const;
};

// The map in front of block `block` (a cut there goes through it): the
// model-wide `boundary`, else a bottleneck's; nullptr when none.
const BoundaryMap* boundary_at(const Model& model, size_t block);

// Blocks [begin, end) as a pipeline stage runs them: with a map at `begin`
// (boundary_at), a stage that does not start the model expands what arrived
// (`x`) first, and with one at `end` a stage that does not end the model
// reduces its output before it leaves; a bottleneck inside the stage is a
// reduce and expand in place. `inputs` are the model inputs of the same
// samples ([B, T] token ids); without maps they are not read and this is the
// blocks' forward chained.
at::Tensor forward_stage(const Model& model, size_t begin, size_t end, const at::Tensor& x,
                         const at::Tensor& inputs);

// The side bytes (BoundaryMap::side_bytes) of a message across the cut in
// front of block `cut` for the samples whose model inputs are `inputs`; 0
// without a map there.
uint64_t side_bytes(const Model& model, size_t cut, const at::Tensor& inputs);

// Mean cross-entropy. LM: output [B, T, V], targets [B, T]. Classification:
// output [B, C], targets [B].
at::Tensor loss(Task task, const at::Tensor& output, const at::Tensor& targets);
// Correct predictions (classification) or correctly predicted tokens (LM).
int64_t correct(Task task, const at::Tensor& output, const at::Tensor& targets);

}  // namespace slowpipe::models
