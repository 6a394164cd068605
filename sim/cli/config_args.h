// Shared by the commands that take configuration (train, timing): INI files in
// order, then --set KEY=VALUE overrides, then the command's shortcut flags
// (each the --set form of one key; empty = not given).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/options.h"

namespace slowpipe::cli {

using Shortcut = std::pair<const char*, const std::string*>;  // key, flag value

inline void apply_config_args(OptionSet& options, const std::vector<std::string>& configs,
                              const std::vector<std::string>& sets,
                              const std::vector<Shortcut>& shortcuts) {
  for (const auto& f : configs) options.load_ini(f);
  for (const auto& s : sets) options.set_assignment(s);
  for (const auto& [key, value] : shortcuts) {
    if (!value->empty()) options.set(key, *value);
  }
}

}  // namespace slowpipe::cli
