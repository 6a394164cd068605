// The run log: one HDF5 file per run (schema in docs/hdf5-schema.md).
//
// Root attributes hold the resolved config and provenance (strings). Every
// string (attribute or blob) is stored fixed-length and null-terminated, so the
// file has no global heap; older logs' variable-length strings still read
// (docs/hdf5-schema.md, "Strings" and "Older logs"). Each table
// ("train", "eval", ...) is an HDF5 group with one chunked, extendable 1-D float64
// dataset per column, all of equal length, each carrying "unit" and
// "description" attributes. Columns may be added to a table later (e.g. one per
// pipeline boundary); earlier rows of a new column are NaN. Rows are buffered
// and written at least every `flush_every` rows, and H5Fflush is called then, so
// a run killed with SIGKILL leaves a readable file with every flushed row.
//
// Kill safety without SWMR: datasets grow a whole chunk (kChunkRows rows) at a
// time, so a steady-state flush only writes raw data into space the file already
// has; the table's "rows" attribute (the count of complete rows) is raised only
// after that data is on disk. Readers trust "rows", never the dataset extent.
// SWMR was not chosen: it needs every column before writing starts and leaves a
// killed file marked "open for write", unreadable by h5dump/h5py until h5clear.
// No libtorch here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace slowpipe::runlog {

struct ColumnInfo {
  std::string name;         // snake_case, e.g. "loss", "sim_time_s", "fw0_bytes"
  std::string unit;         // "1", "s", "bytes", "bits/byte", ...
  std::string description;  // one line
};

// Rows per HDF5 chunk of every column dataset; datasets grow by whole chunks.
constexpr int64_t kChunkRows = 1024;
// Group that holds put_text() blobs; not a valid table name.
constexpr const char* kBlobGroup = "blobs";

class RunLog {
 public:
  // Creates `path` (parent folders too). Refuses to overwrite an existing file
  // unless `overwrite`; throws UsageError with the path.
  RunLog(const std::string& path, bool overwrite, int flush_every = 10);
  // Opens an existing run log to continue its run (resume). Root attributes,
  // blobs and every table with its columns are kept; each table named in
  // `keep_rows` is cut to that many rows (its "rows" attribute is lowered and
  // flushed at once, so a kill right after reopening shows exactly those rows),
  // tables not named keep all their rows. Appends then continue after the kept
  // rows, overwriting what the cut rows held; set_attribute() replaces old
  // values (e.g. "status"). UsageError: no such file, not HDF5, a negative
  // count; DataError: a damaged file, a table with fewer rows than asked to keep,
  // a table named in `keep_rows` with a row count > 0 that does not exist.
  static std::unique_ptr<RunLog> reopen(const std::string& path,
                                        const std::map<std::string, int64_t>& keep_rows,
                                        int flush_every = 10);
  ~RunLog();  // flushes and closes
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  // A string value with a NUL byte, or over 60,000 bytes (one object-header
  // message), is a UsageError: store long text with put_text.
  void set_attribute(const std::string& key, const std::string& value);
  void set_attribute(const std::string& key, double value);
  // Declares columns (idempotent for existing names; new names extend the table).
  void declare(const std::string& table, const std::vector<ColumnInfo>& columns);
  // Appends one row: values by column name; undeclared names throw; missing
  // columns get NaN.
  void append(const std::string& table, const std::map<std::string, double>& row);
  // Stores a JSON/text blob (e.g. a step's op trace) under /blobs/<name>;
  // a second put with the same name replaces the first. Written at once.
  // Text with a NUL byte is a UsageError.
  void put_text(const std::string& name, const std::string& text);
  void flush();

  // Extensions.
  const std::string& path() const;
  // Rows appended to `table` so far (flushed or still buffered); 0 if unknown.
  int64_t rows(const std::string& table) const;
  // Rows of `table` already on disk (what a reader would see after a kill).
  int64_t flushed_rows(const std::string& table) const;

 private:
  RunLog();  // for reopen()
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reading back. Every reader throws UsageError for a missing file or a file
// that is not HDF5 (naming the path) and DataError for a damaged one, naming
// what is wrong: a "rows" attribute that is negative, not an integer or beyond
// a column's data, a column that is not a 1-D floating-point dataset, a table
// member that is not a column, an unreadable column in a finished run (see
// `skipped`), or a missing train/eval table in a file with config.* attributes.
// Neither writer nor readers take HDF5's file lock, so a live run's file can be
// read (it shows the rows flushed so far).
struct Table {
  std::vector<ColumnInfo> columns;
  std::vector<std::vector<double>> values;  // values[c][row]
  // Columns present but unreadable, with the reason ("name: cause"): a column
  // whose creation a kill cut short (it holds no flushed row). Only a file whose
  // run did not finish (root attribute "status" absent or "running") may have
  // them; in any other file an unreadable column is a DataError.
  std::vector<std::string> skipped;
  size_t rows() const { return values.empty() ? 0 : values.front().size(); }
  // The column named `name`; UsageError naming the existing columns otherwise.
  const std::vector<double>& column(const std::string& name) const;
  bool has_column(const std::string& name) const;
};
// Root attributes; numeric ones are printed in shortest round-trip form.
std::map<std::string, std::string> read_attributes(const std::string& path);
// Complete rows of every table (its "rows" attribute), e.g. to check a resume
// point against the log; DataError for a negative or non-integer count.
std::map<std::string, int64_t> read_row_counts(const std::string& path);
std::vector<std::string> list_tables(const std::string& path);
// UsageError naming the tables that exist when `table` is not one of them.
Table read_table(const std::string& path, const std::string& table);
// Blobs stored with put_text.
std::vector<std::string> list_blobs(const std::string& path);
std::string read_text(const std::string& path, const std::string& name);
// TSV with one header line of column names; integers print without decimals,
// NaN prints as "nan", other values in shortest round-trip form.
void write_tsv(const Table& table, std::ostream& out);

// HDF5 error plumbing, shared by the writer and the readers. HDF5's own stderr
// error stacks are switched off (once per thread) and replaced by a recorder;
// `hdf5_error_cause()` returns, and clears, the deepest message on the stack
// of the last failed HDF5 call ("" if none), e.g. "truncated file: eof = ...",
// for wording our own exceptions.
void silence_hdf5_errors();
std::string hdf5_error_cause();

}  // namespace slowpipe::runlog
