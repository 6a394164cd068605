// Short names of configuration keys for run names, plot labels and legends:
// the part after the last dot (`compress.fw` -> `fw`), the section for generic
// last parts (`net.preset` -> `net`, `model.name` -> `model`), the whole key
// where two short names would clash. Sweep point names and plot legends use
// the same names, so a legend entry reads like the run's file name.
#pragma once

#include <string>
#include <vector>

namespace slowpipe::study {

std::vector<std::string> short_key_names(const std::vector<std::string>& keys);

// The short name of `key` among `keys` (key must be one of them).
std::string short_key_name(const std::string& key, const std::vector<std::string>& keys);

}  // namespace slowpipe::study
