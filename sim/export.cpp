// `slowpipe export` helpers: TSV of one table, and a plot label from the run's
// own attributes (see export.h). The CLI wiring lives with the CLI.
#include "sim/export.h"

#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "sim/runlog.h"

namespace slowpipe::sim {

void export_table(const std::string& h5_path, const std::string& table, std::ostream& out,
                  std::ostream& warnings) {
  const Table t = read_table(h5_path, table);
  for (const auto& column : t.skipped) {
    warnings << "warning: run log " << h5_path << ": column " << table << "/" << column
             << " is unreadable and left out (the run did not finish; a kill cut its creation "
                "short)\n";
  }
  write_tsv(t, out);
}

std::string run_label(const std::string& h5_path) {
  const std::map<std::string, std::string> attrs = read_attributes(h5_path);
  auto value = [&](const std::string& key) {
    auto it = attrs.find(key);
    return it == attrs.end() ? std::string() : it->second;
  };
  if (!value("config.run.label").empty()) return value("config.run.label");
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"", "config.model.name"},
      {"fw=", "config.compress.fw"},
      {"bw=", "config.compress.bw"},
      {"net=", "config.net.preset"},
  };
  std::string label;
  for (const auto& [prefix, key] : parts) {
    const std::string v = value(key);
    if (v.empty()) continue;
    label += (label.empty() ? "" : " ") + prefix + v;
  }
  if (!label.empty()) return label;
  return std::filesystem::path(h5_path).stem().string();
}

}  // namespace slowpipe::sim
