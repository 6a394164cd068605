// Run logs from the command line (see summary_inputs.h).
#include "study/summary/summary_inputs.h"

#include <algorithm>
#include <filesystem>

#include "common/errors.h"

namespace slowpipe::study {

std::vector<std::string> expand_run_paths(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  if (args.empty()) throw UsageError("no run log or folder given");
  std::vector<std::string> paths;
  for (const auto& arg : args) {
    std::error_code ec;
    if (!fs::exists(arg, ec)) throw UsageError("no such run log or folder: " + arg);
    if (!fs::is_directory(arg, ec)) {
      paths.push_back(arg);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(arg)) {
      if (entry.is_regular_file() && entry.path().extension() == ".h5") {
        found.push_back(entry.path().string());
      }
    }
    if (found.empty()) throw UsageError("folder " + arg + " holds no run log (*.h5)");
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  return paths;
}

std::vector<RunStats> read_runs(const std::vector<std::string>& paths,
                                const SummaryOptions& options) {
  std::vector<RunStats> runs;
  runs.reserve(paths.size());
  for (const auto& path : paths) runs.push_back(read_run_stats(path, options));
  return runs;
}

}  // namespace slowpipe::study
