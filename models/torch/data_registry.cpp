// The data-set registry and make_dataset. Built-ins are registered on first
// use, through register_dataset.
#include "models/torch/data_registry.h"

#include <utility>

#include "common/errors.h"
#include "common/units.h"
#include "models/facts/data_facts.h"
#include "models/torch/internal/fashion_mnist.h"
#include "models/torch/internal/file_bytes.h"
#include "models/torch/internal/input_file.h"
#include "models/torch/internal/text_dataset.h"
#include "models/torch/internal/token_dataset.h"
#include "models/torch/internal/token_shards.h"

namespace slowpipe::models {
namespace {

std::unique_ptr<Dataset> make_gcide(const DataConfig& cfg, const std::string& path, int64_t seq_len,
                                    int64_t /*vocab*/) {
  const std::string package = cfg.path.empty() ? kGcidePackage : "";
  return std::make_unique<TextDataset>(
      "gcide", path, read_file_bytes(path, package, data_path_key(cfg)), cfg, seq_len);
}

std::unique_ptr<Dataset> make_text(const DataConfig& cfg, const std::string& path, int64_t seq_len,
                                   int64_t /*vocab*/) {
  return std::make_unique<TextDataset>("text", path, read_file_bytes(path, "", "data.path"), cfg,
                                       seq_len);
}

std::unique_ptr<Dataset> make_fashion(const DataConfig& cfg, const std::string& path,
                                      int64_t /*seq_len*/, int64_t /*vocab*/) {
  return std::make_unique<FashionMnist>(path, cfg);
}

std::unique_ptr<Dataset> make_tokens(const DataConfig& cfg, const std::string& path,
                                     int64_t seq_len, int64_t vocab) {
  return std::make_unique<TokenDataset>(path, cfg, seq_len, vocab);
}

// The built-ins, registered as any other data set is: their names, files and
// packages are their facts (data_facts.cpp, no libtorch); here each gets its
// factory.
void register_builtin_datasets() {
  const std::pair<const char*, DatasetFactory> factories[] = {{"gcide", &make_gcide},
                                                              {"fashion-mnist", &make_fashion},
                                                              {"text", &make_text},
                                                              {"tokens", &make_tokens}};
  for (const auto& [name, make] : factories) {
    const DatasetFacts& f = dataset_facts_registry().at("data.name", name);
    register_dataset({f.name, f.description, f.default_path, f.debian_package, make,
                      f.path_is_directory, f.path_is_glob});
  }
}

// A glob's matches (tokens): at least one, each a regular readable file, all
// of them together no more than one input file may hold.
void check_glob(const std::string& pattern, const std::string& key) {
  uint64_t bytes = 0;
  const std::vector<std::string> files = match_shards(pattern, key);
  for (const auto& f : files) bytes += check_input_file(f, key);
  const uint64_t limit = default_input_limit_bytes();
  if (bytes > limit) {
    throw UsageError(key + ": the " + std::to_string(files.size()) + " files matching '" + pattern +
                     "' hold " + format_bytes(static_cast<double>(bytes)) + ", more than the " +
                     format_bytes(static_cast<double>(limit)) +
                     " slowpipe can hold from one input on this machine");
  }
}

// The registry with the built-ins in it: they are registered on first use,
// before any other data set; register_dataset reaches here again while they are.
Registry<DatasetEntry>& filled_datasets() {
  static LazyRegistry<DatasetEntry> datasets("data set", &register_builtin_datasets);
  return datasets.get();
}

}  // namespace

const Registry<DatasetEntry>& dataset_registry() {
  return filled_datasets();
}

std::vector<std::string> dataset_names() {
  return filled_datasets().names();
}

void register_dataset(DatasetEntry entry) {
  const DatasetEntry& added = filled_datasets().add(std::move(entry));
  // The option set's data.name choices are the facts' names.
  if (dataset_facts_registry().find(added.name) == nullptr) {
    register_dataset_facts({added.name, added.description, added.default_path, added.debian_package,
                            added.path_is_directory, added.path_is_glob});
  }
}

const DatasetEntry& find_dataset(const std::string& name) {
  return filled_datasets().at("data.name", name);
}

std::string data_path_key(const DataConfig& cfg) {
  if (!cfg.path.empty()) return "data.path";
  return "data.name=" + cfg.name + " (default " +
         (find_dataset(cfg.name).path_is_directory ? "directory" : "file") + ")";
}

void validate_data_config(const DataConfig& cfg) {
  const DatasetEntry& entry = find_dataset(cfg.name);
  const std::string path = cfg.path.empty() ? entry.default_path : cfg.path;
  if (path.empty()) {
    throw UsageError("data.name=" + cfg.name + " needs data.path (the file to read)");
  }
  if (!(cfg.begin >= 0.0 && cfg.begin < cfg.end && cfg.end <= 1.0)) {
    throw UsageError("data.begin=" + std::to_string(cfg.begin) + " and data.end=" +
                     std::to_string(cfg.end) + " must satisfy 0 <= begin < end <= 1");
  }
  const std::string key = data_path_key(cfg);
  if (entry.path_is_directory) {
    check_input_dir(path, key);
    return;
  }
  if (entry.path_is_glob) {
    check_glob(path, key);
    return;
  }
  const std::string package = cfg.path.empty() ? entry.debian_package : "";
  const uint64_t bytes = check_input_file(path, key, package);
  const uint64_t limit = default_input_limit_bytes();
  if (bytes > limit) {
    throw UsageError(key + ": file '" + path + "' holds " +
                     format_bytes(static_cast<double>(bytes)) + ", more than the " +
                     format_bytes(static_cast<double>(limit)) +
                     " slowpipe can hold from one input file on this machine");
  }
}

std::unique_ptr<Dataset> make_dataset(const DataConfig& cfg, int64_t seq_len, int64_t vocab) {
  validate_data_config(cfg);
  const DatasetEntry& entry = find_dataset(cfg.name);
  return entry.make(cfg, cfg.path.empty() ? entry.default_path : cfg.path, seq_len, vocab);
}

}  // namespace slowpipe::models
