// The data sets' facts (see data_facts.h); the built-ins are registered on
// first use.
#include "models/facts/data_facts.h"

namespace slowpipe::models {
namespace {

void register_builtin_datasets() {
  register_dataset_facts({"gcide",
                          "GCIDE dictionary (Webster 1913 + WordNet) as raw bytes, ~40 MB of text",
                          kGcidePath, kGcidePackage});
  register_dataset_facts({"fashion-mnist",
                          "Fashion-MNIST 28x28 clothing images, 10 classes (60k train, 10k val)",
                          kFashionMnistDir, kFashionMnistPackage,
                          /*path_is_directory=*/true});
  register_dataset_facts(
      {"text", "any text file (plain or gzip) as raw bytes; needs data.path", "", ""});
  register_dataset_facts({"tokens",
                          "train_gpt.py's .bin token shards (uint16 ids, the model's vocabulary); "
                          "data.path is a glob",
                          "", "", /*path_is_directory=*/false, /*path_is_glob=*/true});
}

Registry<DatasetFacts>& filled_datasets() {
  static LazyRegistry<DatasetFacts> facts("data set", &register_builtin_datasets);
  return facts.get();
}

}  // namespace

const Registry<DatasetFacts>& dataset_facts_registry() {
  return filled_datasets();
}

void register_dataset_facts(DatasetFacts facts) {
  filled_datasets().add(std::move(facts));
}

}  // namespace slowpipe::models
