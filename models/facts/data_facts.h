// What the layers above the data sets know of each one without loading it or
// libtorch: its name (data.name's choices), a one-line description, the file
// read when data.path is empty and the Debian package that provides it.
// Library slowpipe::model_facts is plain C++, so the option set of `slowpipe
// train` (config/train_config.h), and the sweeps that resolve points against
// it in the light front, need no libtorch.
//
// The built-ins' facts live in data_facts.cpp; data_registry.cpp binds a
// factory to each of them by name, and register_dataset registers the facts of
// a data set added from outside. Leaves out sizes and shapes (known once read).
#pragma once

#include <string>

#include "common/registry.h"

namespace slowpipe::models {

constexpr const char* kGcidePath = "/usr/share/dictd/gcide.dict.dz";
constexpr const char* kGcidePackage = "dict-gcide";
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";

struct DatasetFacts {
  std::string name;
  std::string description;         // one line
  std::string default_path;        // empty: data.path is required
  std::string debian_package;      // provides default_path; empty when none
  bool path_is_directory = false;  // data.path names a directory (fashion-mnist)
  bool path_is_glob = false;       // data.path is a glob of files (tokens)
};

// The built-ins (gcide, fashion-mnist, text, tokens) first, registered on first use,
// then those added by register_dataset / register_dataset_facts.
const Registry<DatasetFacts>& dataset_facts_registry();
// An empty or duplicate name throws std::logic_error.
void register_dataset_facts(DatasetFacts facts);

}  // namespace slowpipe::models
