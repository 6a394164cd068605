// The run log: one HDF5 file per run (schema in docs/hdf5-schema.md).
//
// Root attributes hold the resolved config and provenance (strings). Each table
// ("train", "eval", ...) is an HDF5 group with one chunked, extendable 1-D float64
// dataset per column, all of equal length, each carrying "unit" and
// "description" attributes. Columns may be added to a table later (e.g. one per
// pipeline boundary); earlier rows of a new column are NaN. Rows are buffered
// and written at least every `flush_every` rows, and H5Fflush is called then, so
// a run killed with SIGKILL leaves a readable file with every flushed row.
// No libtorch here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace slowpipe::sim {

struct ColumnInfo {
  std::string name;         // snake_case, e.g. "loss", "sim_time_s", "fw0_bytes"
  std::string unit;         // "1", "s", "bytes", "bits/byte", ...
  std::string description;  // one line
};

class RunLog {
 public:
  // Creates `path` (parent folders too). Refuses to overwrite an existing file
  // unless `overwrite`; throws UsageError with the path.
  RunLog(const std::string& path, bool overwrite, int flush_every = 10);
  ~RunLog();  // flushes and closes
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  void set_attribute(const std::string& key, const std::string& value);
  void set_attribute(const std::string& key, double value);
  // Declares columns (idempotent for existing names; new names extend the table).
  void declare(const std::string& table, const std::vector<ColumnInfo>& columns);
  // Appends one row: values by column name; undeclared names throw; missing
  // columns get NaN.
  void append(const std::string& table, const std::map<std::string, double>& row);
  // Stores a JSON/text blob (e.g. a step's op trace) under /blobs/<name>.
  void put_text(const std::string& name, const std::string& text);
  void flush();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reading back.
struct Table {
  std::vector<ColumnInfo> columns;
  std::vector<std::vector<double>> values;  // values[c][row]
  size_t rows() const { return values.empty() ? 0 : values.front().size(); }
};
std::map<std::string, std::string> read_attributes(const std::string& path);
std::vector<std::string> list_tables(const std::string& path);
Table read_table(const std::string& path, const std::string& table);
// TSV with one header line of column names; integers print without decimals.
void write_tsv(const Table& table, std::ostream& out);

}  // namespace slowpipe::sim
