// What a resumed run keeps of its old log: sim/internal/log_rebuild.h.
#include "sim/internal/log_rebuild.h"

#include <algorithm>
#include <sstream>

#include "common/errors.h"

namespace slowpipe::sim {

// The first keep[name] rows of each table of the log at `out` (DataError when
// it holds fewer than its checkpoint counts on).
std::map<std::string, runlog::Table> kept_tables(const std::string& out,
                                                 const std::map<std::string, int64_t>& keep) {
  std::map<std::string, runlog::Table> tables;
  for (const auto& [name, rows] : keep) {
    if (rows == 0) continue;
    tables[name] = runlog::read_table(out, name);
    if (static_cast<int64_t>(tables[name].rows()) < rows) {
      throw DataError("run log " + out + " holds " + std::to_string(tables[name].rows()) + " " +
                      name + " rows, fewer than the " + std::to_string(rows) +
                      " its checkpoint counts on");
    }
  }
  return tables;
}

// The text blobs of the log at `out`, but the step traces after `steps_done`.
std::vector<std::pair<std::string, std::string>> kept_blobs(const std::string& out,
                                                            int64_t steps_done) {
  std::vector<std::pair<std::string, std::string>> blobs;
  for (const auto& b : runlog::list_blobs(out)) {
    const std::string prefix = "trace_step_";
    if (b.rfind(prefix, 0) == 0 && std::stoll(b.substr(prefix.size())) > steps_done) continue;
    blobs.emplace_back(b, runlog::read_text(out, b));
  }
  return blobs;
}

// Earlier attempts' warnings (one a line) stay, ahead of this attempt's new ones.
std::vector<std::string> merged_warnings(const std::string& earlier,
                                         const std::vector<std::string>& now) {
  std::vector<std::string> said;
  std::istringstream lines(earlier);
  for (std::string line; std::getline(lines, line);) said.push_back(line);
  for (const auto& w : now) {
    if (std::find(said.begin(), said.end(), w) == said.end()) said.push_back(w);
  }
  return said;
}

void copy_kept(runlog::RunLog& log, const std::map<std::string, runlog::Table>& tables,
               const std::map<std::string, int64_t>& keep,
               const std::vector<std::pair<std::string, std::string>>& blobs) {
  for (const auto& [name, table] : tables) {
    for (int64_t r = 0; r < keep.at(name); ++r) {
      std::map<std::string, double> row;
      for (size_t c = 0; c < table.columns.size(); ++c) {
        row[table.columns[c].name] = table.values[c][static_cast<size_t>(r)];
      }
      log.append(name, row);
    }
  }
  for (const auto& [name, text] : blobs) log.put_text(name, text);
}

}  // namespace slowpipe::sim
