// Checkpoint files: libtorch serialize archives (torch::serialize), one flat
// namespace of keys. All checks run before any parameter is overwritten.
#include "models/checkpoint.h"

#include <torch/torch.h>

#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace slowpipe::models {
namespace {

constexpr const char* kModelKey = "slowpipe_model";
constexpr const char* kBlocksKey = "slowpipe_blocks";

struct Entry {
  std::string key;    // archive key
  std::string label;  // for messages: "block 3 (TransformerBlock) qkv.weight"
  at::Tensor tensor;
  bool is_buffer;
};

std::vector<Entry> entries(const Model& model) {
  std::vector<Entry> out;
  for (size_t i = 0; i < model.blocks.size(); ++i) {
    const auto& b = model.blocks[i];
    auto add = [&](const std::string& name, const at::Tensor& t, bool buffer) {
      std::string key = "b" + std::to_string(i) + "__";
      for (char c : name) {
        if (c == '.') {
          key += "__";
        } else {
          key += c;
        }
      }
      out.push_back(
          {key, "block " + std::to_string(i) + " (" + b->name() + ") " + name, t, buffer});
    };
    for (const auto& p : b->named_parameters(/*recurse=*/true)) add(p.key(), p.value(), false);
    for (const auto& p : b->named_buffers(/*recurse=*/true)) add(p.key(), p.value(), true);
  }
  return out;
}

std::string shape_text(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace

void save_checkpoint(const Model& model, const std::string& path) {
  torch::serialize::OutputArchive archive;
  archive.write(kModelKey, c10::IValue(model.name));
  archive.write(kBlocksKey, c10::IValue(static_cast<int64_t>(model.blocks.size())));
  for (const auto& e : entries(model)) archive.write(e.key, e.tensor.detach(), e.is_buffer);
  try {
    archive.save_to(path);
  } catch (const c10::Error& err) {
    throw UsageError("cannot write checkpoint '" + path + "': " + err.what_without_backtrace());
  }
}

void load_checkpoint(Model& model, const std::string& path) {
  if (!std::ifstream(path).good()) {
    throw UsageError("checkpoint file '" + path + "' not found (model.init_from)");
  }
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& err) {
    throw DataError("checkpoint file '" + path +
                    "' is not a readable libtorch archive: " + err.what_without_backtrace());
  }
  c10::IValue name;
  if (!archive.try_read(kModelKey, name) || !name.isString()) {
    throw DataError("checkpoint file '" + path + "' is not a slowpipe checkpoint (no model name)");
  }
  if (name.toStringRef() != model.name) {
    throw UsageError("checkpoint file '" + path + "' holds a '" + name.toStringRef() +
                     "' model, not '" + model.name + "' (model.name)");
  }
  c10::IValue blocks;
  if (archive.try_read(kBlocksKey, blocks) && blocks.isInt() &&
      blocks.toInt() != static_cast<int64_t>(model.blocks.size())) {
    throw UsageError("checkpoint file '" + path + "' has " + std::to_string(blocks.toInt()) +
                     " blocks, the model has " + std::to_string(model.blocks.size()) +
                     " (check model.layers)");
  }
  auto wanted = entries(model);
  std::vector<at::Tensor> loaded;
  std::set<std::string> known = {kModelKey, kBlocksKey};
  for (const auto& e : wanted) {
    at::Tensor t;
    if (!archive.try_read(e.key, t, e.is_buffer)) {
      throw UsageError("checkpoint file '" + path + "' lacks parameter " + e.label);
    }
    if (!t.sizes().equals(e.tensor.sizes())) {
      throw UsageError("checkpoint file '" + path + "': parameter " + e.label + " has shape " +
                       shape_text(t) + ", the model has " + shape_text(e.tensor) +
                       " (check the model.* keys)");
    }
    known.insert(e.key);
    loaded.push_back(std::move(t));
  }
  for (const auto& k : archive.keys()) {
    if (known.count(k) == 0) {
      throw UsageError("checkpoint file '" + path + "' has parameter '" + k +
                       "' that the model lacks (check the model.* keys)");
    }
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < wanted.size(); ++i) wanted[i].tensor.copy_(loaded[i]);
}

}  // namespace slowpipe::models
