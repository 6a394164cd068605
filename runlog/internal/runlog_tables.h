// Private to the run-log sources (runlog.cpp, runlog_read.cpp,
// runlog_raw_check.cpp): the stored layout of one table, read and checked once
// for the readers and for RunLog::reopen(), and the guard in front of an older
// log's variable-length strings. Not part of the public API (runlog/runlog.h).
#pragma once

#include <H5Cpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runlog/runlog.h"

namespace slowpipe::runlog::detail {

struct StoredColumn {
  int64_t index = 0;  // declaration order ("index" attribute)
  ColumnInfo info;
  H5::DataSet dataset;
  int64_t extent = 0;  // dataset length (>= the table's rows)
};

struct StoredTable {
  int64_t rows = 0;                   // the "rows" attribute, checked against every column
  std::vector<StoredColumn> columns;  // sorted by index
  // Members whose object header cannot be read (a kill cut their creation short).
  std::vector<std::string> unreadable;
};

// Reads table `name` (the group `group`) of the run log at `path` and checks it:
// DataError naming the file, the table and what is wrong for a "rows"
// attribute that is missing, not a scalar integer, negative or longer than a
// column; a member that is not a dataset; a column that is not 1-D or not
// floating point.
StoredTable inspect_table(const std::string& path, const H5::Group& group, const std::string& name);

// The root attribute "status", or "" when absent or not a string.
std::string run_status(const H5::H5File& file);

// Before any attribute of `object` (a file, group or dataset) is opened or
// looked up: DataError, starting with `what`, unless every attribute message
// in its object header holds its parts and its whole value, with a type
// slowpipe writes (runlog_raw_check.cpp). HDF5 1.10 copies past the header
// otherwise.
void check_attribute_messages(hid_t object, const std::string& what);

// Before the member `name` of `parent` is opened: the same checks of its
// object header, and a chunked data layout must have no chunk size of 0
// (HDF5 1.10 divides by it on opening). DataError starting with `what`.
void check_object_header(hid_t parent, const std::string& name, const std::string& what);

// Before HDF5 reads the variable-length string `id` (an attribute of the
// object `owner`, or a scalar dataset): DataError, starting with `what`, unless
// its global heap reference and collection are ones HDF5 1.10 reads without
// crashing or looping (runlog_raw_check.cpp). Only logs written before
// fixed-length strings (2026-11-25) have such strings.
void check_variable_string(hid_t owner, hid_t id, bool attribute, const std::string& what);

}  // namespace slowpipe::runlog::detail
