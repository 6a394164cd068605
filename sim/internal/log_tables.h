// The run log's two tables, each declared once: every column with its unit, its
// description and how its value is filled (docs/hdf5-schema.md lists them).
// train(): one row per optimizer step. eval: one row per evaluation.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runlog/runlog.h"
#include "sim/engine.h"

namespace slowpipe::sim {

// The run log (runlog/) as the trainer writes, rereads and rebuilds it.
using runlog::ColumnInfo;
using runlog::list_blobs;
using runlog::read_attributes;
using runlog::read_row_counts;
using runlog::read_table;
using runlog::read_text;
using runlog::RunLog;
using runlog::Table;

// What one train row is made of.
struct StepRecord {
  int64_t step = 0;  // 1-based
  int epoch = 0;
  const StepResult* result = nullptr;
  int64_t samples = 0;  // seen so far
  double step_s = 0, wall_s = 0;
  double sim_step_s = 0, sim_time_s = 0;
  uint64_t channel_state_bytes = 0;
  double dist_step_s = 0;  // distributed runs
};

// What one eval row is made of.
struct EvalRecord {
  int64_t step = 0;
  int epoch = 0;
  double sim_time_s = 0;
  double loss = 0, metric = 0;      // metric: accuracy or bits/byte
  double loss_c = 0, metric_c = 0;  // with the forward codecs active (NaN: not evaluated)
};

template <class Record>
struct Column {
  ColumnInfo info;
  std::function<double(const Record&)> fill;
};

// Train columns for S stages and D replicas (per-boundary and per-stage ones
// included); `distributed` adds the measured step time and the bytes sent
// through c10d.
std::vector<Column<StepRecord>> train_columns(int stages, int replicas, bool distributed = false);
// Eval columns; language models log bits/byte and perplexity, classifiers accuracy.
std::vector<Column<EvalRecord>> eval_columns(bool language_model);

template <class Record>
void declare_table(RunLog& log, const std::string& table, const std::vector<Column<Record>>& cols) {
  std::vector<ColumnInfo> infos;
  infos.reserve(cols.size());
  for (const auto& c : cols) infos.push_back(c.info);
  log.declare(table, infos);
}

template <class Record>
std::map<std::string, double> make_row(const std::vector<Column<Record>>& cols, const Record& r) {
  std::map<std::string, double> row;
  for (const auto& c : cols) row[c.info.name] = c.fill(r);
  return row;
}

// The run log's heartbeat: root attribute `heartbeat` (UTC, ISO 8601), written
// and flushed when a run starts and after a step once kHeartbeatEvery_s have
// passed since the last one. A run killed without a word (SIGKILL, its host
// gone) keeps `status = running`; readers tell it from a live run by the
// heartbeat's age (runlog/export.h, docs/hdf5-schema.md).
constexpr double kHeartbeatEvery_s = 10;

class Heartbeat {
 public:
  // Writes the heartbeat and flushes the log when `force` or when it is due.
  void beat(RunLog& log, bool force = false);

 private:
  std::chrono::steady_clock::time_point last_{};
  bool written_ = false;
};

// An error message as the log's "error" attribute holds it: without NUL bytes
// and cut to 16,000 bytes (an attribute holds at most about 60 KB; a message
// that long is a dump, not a reason).
std::string error_attribute(std::string text);

}  // namespace slowpipe::sim
