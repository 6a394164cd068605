// What a resumed run keeps of its old log (sim/trainer.cpp rebuilds the log
// from it): the first rows of each table its checkpoint counts on, the text
// blobs but the step traces after the checkpoint, and the warnings of earlier
// attempts. The rebuilt file itself (attributes, declared tables) is the
// trainer's; these only read the old file and copy rows into a new one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runlog/runlog.h"

namespace slowpipe::sim {

// The first keep[name] rows of each table of the log at `out` (DataError when
// it holds fewer than its checkpoint counts on); tables kept at 0 rows are absent.
std::map<std::string, runlog::Table> kept_tables(const std::string& out,
                                                 const std::map<std::string, int64_t>& keep);

// The text blobs of the log at `out` (name, text), but the step traces
// (`trace_step_N`) after `steps_done`.
std::vector<std::pair<std::string, std::string>> kept_blobs(const std::string& out,
                                                            int64_t steps_done);

// Earlier attempts' warnings (one a line) stay, ahead of this attempt's new ones;
// each once.
std::vector<std::string> merged_warnings(const std::string& earlier,
                                         const std::vector<std::string>& now);

// Appends the first keep[name] rows of every kept table to `log` (whose tables
// are declared), then the blobs.
void copy_kept(runlog::RunLog& log, const std::map<std::string, runlog::Table>& tables,
               const std::map<std::string, int64_t>& keep,
               const std::vector<std::pair<std::string, std::string>>& blobs);

}  // namespace slowpipe::sim
