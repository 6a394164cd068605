// A finished or killed run's configuration read back from its log: the
// `config.*` root attributes (docs/hdf5-schema.md) applied to an OptionSet,
// as `train --resume` and `slowpipe retime` both need. Plain C++ (no libtorch).
#pragma once

#include <map>
#include <string>

#include "common/options.h"

namespace slowpipe::config {

// Sets every `config.KEY` attribute of `attrs` as KEY in `options`. `source`
// names the log in messages ("--resume RUN.h5", "RUN.h5"). UsageError when a
// key does not load (a log of another slowpipe version) or when there is no
// config.* attribute at all (not a slowpipe run log). Returns the keys set.
int apply_logged_config(const std::map<std::string, std::string>& attrs, OptionSet& options,
                        const std::string& source);

}  // namespace slowpipe::config
