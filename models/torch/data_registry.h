// The data-set registry: name -> factory + one-line description + default file +
// the Debian package that provides it. make_dataset() builds the data set named
// by data.name; the same names appear in the CLI, config files, HDF5 attributes
// and plot labels.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/registry.h"
#include "models/facts/data_config.h"
#include "models/torch/dataset.h"

namespace slowpipe::models {

// `seq_len` is the model's context length (text windows are seq_len+1 bytes);
// image data sets ignore it. `vocab` is the model's vocabulary size (0: not a
// language model); token data refuses ids at or above it, the others ignore
// it. `path` is cfg.path or, when empty, the default.
using DatasetFactory = std::function<std::unique_ptr<Dataset>(
    const DataConfig& cfg, const std::string& path, int64_t seq_len, int64_t vocab)>;

struct DatasetEntry {
  std::string name;
  std::string description;     // one line
  std::string default_path;    // empty: data.path is required
  std::string debian_package;  // provides default_path; empty when none
  DatasetFactory make;
  bool path_is_directory = false;  // data.path names a directory (fashion-mnist)
  bool path_is_glob = false;       // data.path is a glob of files (tokens)
};

// Built-ins first ("gcide", "fashion-mnist", "text", "tokens", added through
// register_dataset on first use), then registered ones.
const Registry<DatasetEntry>& dataset_registry();
std::vector<std::string> dataset_names();
// Adds a data set; an empty or duplicate name throws std::logic_error.
void register_dataset(DatasetEntry entry);
// Throws UsageError naming data.name for an unknown name, listing the known ones.
const DatasetEntry& find_dataset(const std::string& name);

// The option a data set's path came from, for messages: "data.path", or
// "data.name=gcide (default file)" when data.path is empty.
std::string data_path_key(const DataConfig& cfg);

// Everything about data.* that can be checked before any byte is read: a known
// data.name, a path when one is needed, 0 <= begin < end <= 1, and a path that
// is a regular readable file (a directory for fashion-mnist) no larger than
// default_input_limit_bytes(); for a glob (tokens), at least one match, each a
// regular readable file, together no larger than that limit. UsageError naming
// the key and the file. The trainer calls it before anything is loaded;
// make_dataset calls it too.
void validate_data_config(const DataConfig& cfg);

// validate_data_config, then builds the data set for a model of context
// `seq_len` and vocabulary `vocab` (models/model_limits.h, model_vocab; 0, the
// default, for a caller without a model: data.name=tokens then refuses).
std::unique_ptr<Dataset> make_dataset(const DataConfig& cfg, int64_t seq_len, int64_t vocab = 0);

}  // namespace slowpipe::models
