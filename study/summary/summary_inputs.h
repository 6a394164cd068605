// The run logs named on the command line of `slowpipe summary` and `slowpipe
// plot`: files as given, and for a folder every *.h5 file directly in it
// (sorted by name; resume checkpoint folders *.ckpt and subfolders are not
// entered). No libtorch here.
#pragma once

#include <string>
#include <vector>

#include "study/summary/summary_stats.h"

namespace slowpipe::study {

// UsageError: no argument, a path that does not exist, a folder without any
// *.h5 file in it.
std::vector<std::string> expand_run_paths(const std::vector<std::string>& args);

// read_run_stats() for each path, in order.
std::vector<RunStats> read_runs(const std::vector<std::string>& paths,
                                const SummaryOptions& options);

}  // namespace slowpipe::study
