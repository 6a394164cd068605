// Prints every registered codec, feedback-scheme, model, data-set and
// optimizer name, one a line as "FAMILY NAME" (FAMILY: codec, scheme, model,
// data, optimizer), for test_registry_names.sh: the names a library
// source outside its registry must not switch on are read from the registries
// themselves, never from a hand-kept list. Torch-free (slowpipe::codecs,
// slowpipe::model_facts, slowpipe::config): the built-ins are registered on
// first use of each registry. Usage: registry_names
#include <iostream>

#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/codec.h"
#include "config/optim_registry.h"
#include "models/facts/data_facts.h"
#include "models/facts/model_facts.h"

namespace {

template <class Entry>
void print_names(const char* family, const slowpipe::Registry<Entry>& registry) {
  for (const Entry& e : registry) std::cout << family << " " << e.name << "\n";
}

}  // namespace

int main() {
  print_names("codec", slowpipe::compressors::codec_registry());
  print_names("scheme", slowpipe::compressors::scheme_registry());
  print_names("model", slowpipe::models::model_facts_registry());
  print_names("data", slowpipe::models::dataset_facts_registry());
  print_names("optimizer", slowpipe::config::optimizer_registry());
  return 0;
}
