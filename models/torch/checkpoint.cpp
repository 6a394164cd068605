// Checkpoint files: a checked file (CRC-32, atomic write) around a libtorch
// serialize archive (torch::serialize, one flat namespace of keys). The order of
// the checks on load: the path, the old format, the container (magic, length,
// checksum), the kind, the model and its shape config, then every parameter.
// All run before any parameter is overwritten.
#include "models/torch/checkpoint.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "models/torch/checked_file.h"
#include "models/torch/internal/input_file.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"

namespace slowpipe::models {
namespace {

constexpr const char* kModelKey = "slowpipe_model";
constexpr const char* kBlocksKey = "slowpipe_blocks";
constexpr const char* kKey = "model.init_from";

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

std::string ckpt(const std::string& path) {
  return "checkpoint file '" + path + "'";
}

// The old format was a bare libtorch archive: a zip file.
void refuse_old_format(const std::string& path) {
  uint64_t size = 0;
  const std::string head = read_input_prefix(path, kKey, 4, &size);
  if (head == std::string("PK\x03\x04", 4)) {
    throw DataError(ckpt(path) +
                    " has the old format without a checksum, which cannot be verified; "
                    "re-create it (run the run that wrote it again, with run.save)");
  }
}

// The metadata as JSON; DataError when it is not (the checksum passed, so only a
// foreign writer can cause this).
nlohmann::json parse_metadata(const CheckedFile& f, const std::string& path) {
  if (f.kind != kModelCheckpointKind) {
    throw UsageError(std::string(kKey) + ": " + ckpt(path) + " holds a '" + f.kind +
                     "' file, not a model checkpoint ('" + kModelCheckpointKind + "')");
  }
  nlohmann::json meta = nlohmann::json::parse(f.metadata, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || !meta.contains("model.name") || !meta["model.name"].is_string() ||
      !meta.contains("shape") || !meta["shape"].is_object()) {
    throw DataError(ckpt(path) + " has unreadable metadata (not a slowpipe model checkpoint)");
  }
  return meta;
}

// Refuses another model or another shape config, naming every differing key.
// With `model_keys_only`, data.* keys are not compared (they are not known yet).
void compare_config(const nlohmann::json& meta, const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& shape,
                    const std::string& path, bool model_keys_only) {
  const std::string saved_name = meta["model.name"].get<std::string>();
  if (saved_name != name) {
    throw UsageError(ckpt(path) + " holds a '" + saved_name + "' model, not '" + name +
                     "' (model.name)");
  }
  std::string saved_parts, run_parts;
  for (const auto& [key, value] : shape) {
    if (model_keys_only && key.rfind("model.", 0) != 0) continue;
    const auto it = meta["shape"].find(key);
    const std::string saved = it != meta["shape"].end() && it->is_string()
                                  ? it->get<std::string>()
                                  : std::string("(not recorded)");
    if (saved != value) {
      saved_parts += (saved_parts.empty() ? "" : " and ") + key + "=" + saved;
      run_parts += (run_parts.empty() ? "" : " and ") + key + "=" + value;
    }
  }
  // A key recorded only off its default (model.subspace, model.ffn, model.vocab,
  // model.bottleneck): saved, but not in this run.
  for (const auto& item : meta["shape"].items()) {
    const std::string& key = item.key();
    if ((key != "model.subspace" && key != "model.ffn" && key != "model.vocab" &&
         key != "model.bottleneck") ||
        !item.value().is_string())
      continue;
    bool in_run = false;
    for (const auto& kv : shape) in_run = in_run || kv.first == key;
    if (!in_run) {
      saved_parts +=
          (saved_parts.empty() ? "" : " and ") + key + "=" + item.value().get<std::string>();
      run_parts += (run_parts.empty() ? "" : " and ") + key + " unset";
    }
  }
  if (!saved_parts.empty()) {
    throw UsageError(ckpt(path) + " was written for " + saved_parts + ", this run has " +
                     run_parts + " (set the keys of the run that wrote it)");
  }
}

}  // namespace

void save_checkpoint(const Model& model, const std::string& path) {
  torch::serialize::OutputArchive archive;
  archive.write(kModelKey, c10::IValue(model.name));
  archive.write(kBlocksKey, c10::IValue(static_cast<int64_t>(model.blocks.size())));
  for (const auto& e : entries(model)) archive.write(e.key, e.tensor.detach(), e.is_buffer);
  std::ostringstream os;
  try {
    archive.save_to(os);
  } catch (const c10::Error& err) {
    throw std::runtime_error("cannot serialize checkpoint '" + path +
                             "': " + err.what_without_backtrace());
  }
  nlohmann::json meta;
  meta["model.name"] = model.name;
  meta["blocks"] = model.blocks.size();
  meta["parameters"] = model.parameter_count(0, model.blocks.size());
  meta["shape"] = nlohmann::json::object();
  for (const auto& [key, value] : model.shape_config) meta["shape"][key] = value;
  write_checked_file(path, kModelCheckpointKind, meta.dump(), os.str());
}

void load_checkpoint(Model& model, const std::string& path) {
  refuse_old_format(path);
  CheckedFile file;
  try {
    file = read_checked_file(path, kKey);
  } catch (const DataError& err) {
    throw DataError(std::string(kKey) + ": checkpoint " + err.what());
  }
  const nlohmann::json meta = parse_metadata(file, path);
  compare_config(meta, model.name, model.shape_config, path, /*model_keys_only=*/false);

  torch::serialize::InputArchive archive;
  try {
    archive.load_from(file.payload.data(), file.payload.size());
  } catch (const c10::Error& err) {
    throw DataError(ckpt(path) +
                    " holds no readable libtorch archive: " + err.what_without_backtrace());
  }
  c10::IValue name;
  if (!archive.try_read(kModelKey, name) || !name.isString()) {
    throw DataError(ckpt(path) + " is not a slowpipe checkpoint (no model name)");
  }
  if (name.toStringRef() != model.name) {
    throw UsageError(ckpt(path) + " holds a '" + name.toStringRef() + "' model, not '" +
                     model.name + "' (model.name)");
  }
  c10::IValue blocks;
  if (archive.try_read(kBlocksKey, blocks) && blocks.isInt() &&
      blocks.toInt() != static_cast<int64_t>(model.blocks.size())) {
    throw UsageError(ckpt(path) + " has " + std::to_string(blocks.toInt()) +
                     " blocks, the model has " + std::to_string(model.blocks.size()) +
                     " (check model.layers)");
  }
  auto wanted = entries(model);
  std::vector<at::Tensor> loaded;
  std::set<std::string> known = {kModelKey, kBlocksKey};
  for (const auto& e : wanted) {
    at::Tensor t;
    if (!archive.try_read(e.key, t, e.is_buffer)) {
      throw UsageError(ckpt(path) + " lacks parameter " + e.label);
    }
    if (!t.sizes().equals(e.tensor.sizes())) {
      throw UsageError(ckpt(path) + ": parameter " + e.label + " has shape " + shape_text(t) +
                       ", the model has " + shape_text(e.tensor) + " (check the model.* keys)");
    }
    known.insert(e.key);
    loaded.push_back(std::move(t));
  }
  for (const auto& k : archive.keys()) {
    if (known.count(k) == 0) {
      throw UsageError(ckpt(path) + " has parameter '" + k +
                       "' that the model lacks (check the model.* keys)");
    }
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < wanted.size(); ++i) wanted[i].tensor.copy_(loaded[i]);
}

void check_checkpoint_config(const ModelConfig& cfg, const std::string& path) {
  refuse_old_format(path);
  CheckedFile file;
  try {
    file = read_checked_file_header(path, kKey);
  } catch (const DataError& err) {
    throw DataError(std::string(kKey) + ": checkpoint " + err.what());
  }
  const nlohmann::json meta = parse_metadata(file, path);
  const ModelEntry& entry = find_model(cfg.name);
  DatasetInfo none;
  compare_config(meta, entry.name, shape_config(cfg, none), path, /*model_keys_only=*/true);
}

}  // namespace slowpipe::models
