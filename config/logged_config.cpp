// A run's configuration read back from its log: config/logged_config.h.
#include "config/logged_config.h"

#include "common/errors.h"

namespace slowpipe::config {

int apply_logged_config(const std::map<std::string, std::string>& attrs, OptionSet& options,
                        const std::string& source) {
  const std::string prefix = "config.";
  int keys = 0;
  for (const auto& [k, v] : attrs) {
    if (k.rfind(prefix, 0) != 0) continue;
    try {
      options.set(k.substr(prefix.size()), v);
    } catch (const UsageError& e) {
      throw UsageError(source + ": the logged configuration does not load (" + e.what() +
                       "); was it written by another slowpipe version?");
    }
    ++keys;
  }
  if (keys == 0) throw UsageError(source + " holds no configuration: not a slowpipe run log");
  return keys;
}

}  // namespace slowpipe::config
