// Reading a run log back: root attributes, tables, text blobs, and TSV output.
//
// The reader trusts each table's "rows" attribute (the count of complete rows,
// see runlog.cpp) rather than the dataset extent, which runs ahead of the data
// while a run is alive or after it was killed. Files are opened without HDF5's
// file lock, so a live run can be exported; what it sees is the last flush.
// Missing or non-HDF5 files are UsageErrors; HDF5 failures inside a file that
// opened are DataErrors naming the file and HDF5's own cause, and a layout that
// breaks the schema (docs/hdf5-schema.md) is a DataError saying what is wrong:
// nothing is cut or dropped without a word.
#include <H5Cpp.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "common/errors.h"
#include "runlog/runlog.h"
#include "runlog/internal/runlog_tables.h"

namespace slowpipe::runlog {
namespace {

[[noreturn]] void throw_damaged(const std::string& path, const H5::Exception& e) {
  const std::string cause = hdf5_error_cause();
  throw DataError("run log " + path + " is damaged or unreadable (" + e.getFuncName() +
                  (cause.empty() ? "" : ": " + cause) + ")");
}

H5::H5File open_for_reading(const std::string& path) {
  silence_hdf5_errors();
  hdf5_error_cause();  // drop any stale cause
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError("run log " + path + ": no such file");
  if (!fs::is_regular_file(path, ec)) throw UsageError("run log " + path + ": not a file");
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    throw UsageError("run log " + path + " is not an HDF5 file");
  }
  try {
    H5::FileAccPropList access;
    H5Pset_file_locking(access.getId(), /*use_file_locking=*/false,
                        /*ignore_when_disabled=*/true);
    return H5::H5File(path, H5F_ACC_RDONLY, H5::FileCreatPropList::DEFAULT, access);
  } catch (const H5::Exception& e) {
    throw_damaged(path, e);
  }
}

// Runs `body` on the open file, turning HDF5 exceptions into DataError.
template <typename F>
auto with_file(const std::string& path, F&& body) {
  H5::H5File file = open_for_reading(path);
  try {
    return body(file);
  } catch (const H5::Exception& e) {
    throw_damaged(path, e);
  }
}

// Closes an HDF5 C handle at scope exit.
struct Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

// The size of the file holding `id`, in bytes (0 if unknown).
uint64_t file_bytes_of(hid_t id) {
  const Handle file{H5Iget_file_id(id), H5Fclose};
  hsize_t bytes = 0;
  if (file.id < 0 || H5Fget_filesize(file.id, &bytes) < 0) return 0;
  return bytes;
}

// One string, from an attribute of `owner` or a scalar dataset (`id`), read
// through the C API with the checks HDF5's C++ wrappers leave out: they read
// any number of elements into one pointer and call strlen on a null string,
// which a damaged file can hold. New logs store fixed-length strings (read up
// to the first NUL, never more bytes than the file has); older logs'
// variable-length strings are checked first (runlog_raw_check.cpp), since
// HDF5 1.10 crashes or hangs on a damaged global heap. `what` names the object
// in the DataError.
std::string read_one_string(hid_t id, hid_t owner, bool attribute, const std::string& what) {
  const Handle type{attribute ? H5Aget_type(id) : H5Dget_type(id), H5Tclose};
  const Handle space{attribute ? H5Aget_space(id) : H5Dget_space(id), H5Sclose};
  if (type.id < 0 || space.id < 0) {
    throw DataError(what + " is unreadable (" + hdf5_error_cause() + ")");
  }
  if (H5Tget_class(type.id) != H5T_STRING) throw DataError(what + " is not a string");
  const hssize_t n = H5Sget_simple_extent_npoints(space.id);
  if (n != 1) {
    throw DataError(what + " holds " + std::to_string(n) + " values, expected one string");
  }
  const Handle memory{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_cset(memory.id, H5Tget_cset(type.id));  // no conversion between character sets
  herr_t status = -1;
  std::string out;
  if (H5Tis_variable_str(type.id) > 0) {
    detail::check_variable_string(owner, id, attribute, what);
    H5Tset_size(memory.id, H5T_VARIABLE);
    char* text = nullptr;
    status = attribute ? H5Aread(id, memory.id, &text)
                       : H5Dread(id, memory.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text);
    if (status >= 0 && text != nullptr) out = text;
    if (text != nullptr) H5free_memory(text);
  } else {
    const size_t size = H5Tget_size(type.id);
    const uint64_t file_bytes = file_bytes_of(id);
    if (size == 0 || size > file_bytes) {
      throw DataError(what + " has a string size of " + std::to_string(size) +
                      " bytes, for a file of " + std::to_string(file_bytes) + " bytes");
    }
    H5Tset_size(memory.id, size);
    H5Tset_strpad(memory.id, H5T_STR_NULLPAD);
    std::vector<char> buffer(size + 1, '\0');
    status = attribute ? H5Aread(id, memory.id, buffer.data())
                       : H5Dread(id, memory.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data());
    out.assign(buffer.data(), strnlen(buffer.data(), size));
  }
  if (status < 0) throw DataError(what + " cannot be read (" + hdf5_error_cause() + ")");
  return out;
}

std::string read_string_attribute(const H5::H5Object& object, const std::string& key,
                                  const std::string& what) {
  if (!object.attrExists(key)) return "";
  const H5::Attribute attr = object.openAttribute(key);
  return read_one_string(attr.getId(), object.getId(), /*attribute=*/true,
                         what + ": attribute '" + key + "'");
}

// One number from attribute `attr`; DataError unless it holds exactly one.
template <typename T>
T read_one_number(const H5::Attribute& attr, const H5::PredType& type, const std::string& what) {
  const hssize_t n = attr.getSpace().getSimpleExtentNpoints();
  if (n != 1) throw DataError(what + " holds " + std::to_string(n) + " values, expected one");
  T value{};
  attr.read(type, &value);
  return value;
}

std::string shortest(double value) {
  return fmt::format("{}", value);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace

const std::vector<double>& Table::column(const std::string& name) const {
  for (size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].name == name) return values[c];
  }
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c.name);
  throw UsageError("no column '" + name + "'; columns: " + join(names));
}

bool Table::has_column(const std::string& name) const {
  return std::any_of(columns.begin(), columns.end(),
                     [&](const ColumnInfo& c) { return c.name == name; });
}

std::map<std::string, std::string> read_attributes(const std::string& path) {
  return with_file(path, [&](H5::H5File& file) {
    std::map<std::string, std::string> out;
    detail::check_attribute_messages(file.getId(), "run log " + path + ": the root group");
    const int n = file.getNumAttrs();
    for (int i = 0; i < n; ++i) {
      H5::Attribute attr = file.openAttribute(static_cast<unsigned>(i));
      const std::string name = attr.getName();
      const std::string what = "run log " + path + ": attribute '" + name + "'";
      switch (attr.getTypeClass()) {
        case H5T_STRING:
          out[name] = read_one_string(attr.getId(), file.getId(), /*attribute=*/true, what);
          break;
        case H5T_FLOAT:
          out[name] = shortest(read_one_number<double>(attr, H5::PredType::NATIVE_DOUBLE, what));
          break;
        case H5T_INTEGER:
          out[name] =
              std::to_string(read_one_number<int64_t>(attr, H5::PredType::NATIVE_INT64, what));
          break;
        default:
          break;  // not written by slowpipe
      }
    }
    return out;
  });
}

std::vector<std::string> list_tables(const std::string& path) {
  return with_file(path, [&](H5::H5File& file) {
    std::vector<std::string> tables;
    const hsize_t n = file.getNumObjs();
    for (hsize_t i = 0; i < n; ++i) {
      const std::string name = file.getObjnameByIdx(i);
      if (name == kBlobGroup) continue;
      try {
        if (file.childObjType(name) != H5O_TYPE_GROUP) continue;
        const H5::Group group = file.openGroup(name);
        detail::check_attribute_messages(group.getId(),
                                         "run log " + path + ": group '" + name + "'");
        if (group.attrExists("rows")) tables.push_back(name);
      } catch (const H5::Exception&) {
        hdf5_error_cause();  // a table whose creation a kill cut short: not a table
      }
    }
    return tables;
  });
}

namespace detail {

namespace {

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER:
      return "integer";
    case H5T_FLOAT:
      return "floating-point";
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ARRAY:
      return "array";
    case H5T_ENUM:
      return "enum";
    default:
      return "non-numeric";
  }
}

const char* object_kind(H5O_type_t t) {
  switch (t) {
    case H5O_TYPE_GROUP:
      return "a group";
    case H5O_TYPE_NAMED_DATATYPE:
      return "a named datatype";
    default:
      return "not a dataset";
  }
}

// The table's 'rows' attribute: one integer, not negative, and no more rows
// than the file could hold.
int64_t read_row_count(const std::string& path, const H5::Group& group, const std::string& where) {
  int64_t rows = 0;
  if (!group.attrExists("rows")) throw DataError(where + " has no 'rows' attribute");
  {
    H5::Attribute attr = group.openAttribute("rows");
    const H5T_class_t type = attr.getTypeClass();
    if (type != H5T_INTEGER || attr.getSpace().getSimpleExtentNpoints() != 1) {
      throw DataError(where + ": its 'rows' attribute is " +
                      (type != H5T_INTEGER ? std::string(class_name(type)) : "not a single value") +
                      ", expected one integer");
    }
    attr.read(H5::PredType::NATIVE_INT64, &rows);
  }
  if (rows < 0) {
    throw DataError(where + ": its 'rows' attribute is " + std::to_string(rows) + " (negative)");
  }
  // Columns are stored uncompressed, so every counted row is 8 bytes in the file
  // (this also keeps a hostile count from allocating terabytes).
  std::error_code ec;
  const uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  if (!ec && static_cast<uintmax_t>(rows) > file_bytes / sizeof(double)) {
    throw DataError(where + ": its 'rows' attribute is " + std::to_string(rows) +
                    ", more than the whole file (" + std::to_string(file_bytes) +
                    " bytes) can hold");
  }
  return rows;
}

// Opens member `member` as a column into `ds`; false (and the member listed
// in `unreadable`) when it cannot be read. A member that is not a dataset is
// an error.
bool open_column(const H5::Group& group, const std::string& member, const std::string& where,
                 H5::DataSet& ds, std::vector<std::string>& unreadable) {
  try {
    const H5O_type_t kind = group.childObjType(member);
    if (kind != H5O_TYPE_DATASET) {
      throw DataError(where + ": member '" + member + "' is " + object_kind(kind) +
                      ", not a column");
    }
  } catch (const H5::Exception&) {
    // A column whose creation a kill cut short (its link reached the disk,
    // its header did not); the caller decides whether that may happen.
    hdf5_error_cause();
    unreadable.push_back(member);
    return false;
  }
  try {
    // Its header's bytes before HDF5 decodes them (runlog_raw_check.cpp); a
    // header that fails the check is unreadable as one HDF5 cannot load.
    check_object_header(group.getId(), member, where + ": column '" + member + "'");
    ds = group.openDataSet(member);
  } catch (const DataError&) {
    unreadable.push_back(member);
    return false;
  } catch (const H5::Exception&) {
    hdf5_error_cause();
    unreadable.push_back(member);
    return false;
  }
  return true;
}

// Checks that column `ds` is stored as slowpipe writes it and holds at least
// `rows` values; returns its extent.
int64_t check_column_layout(const H5::DataSet& ds, const std::string& column, int64_t rows) {
  H5::DataSpace space = ds.getSpace();
  const int rank = space.getSimpleExtentNdims();
  if (rank != 1) {
    throw DataError(column + " has rank " + std::to_string(rank) + ", expected a 1-D column");
  }
  const H5T_class_t type = ds.getTypeClass();
  if (type != H5T_FLOAT) {
    throw DataError(column + " holds " + class_name(type) + " values, expected float64");
  }
  // slowpipe writes every column as float64 in chunks of kChunkRows. Anything
  // else is refused before data is read: HDF5 1.10 copies past its buffers
  // when reading some damaged layouts (found by fuzz_runlog_read).
  const H5::DSetCreatPropList layout = ds.getCreatePlist();
  hsize_t chunk[1] = {0};
  if (layout.getLayout() != H5D_CHUNKED || layout.getChunk(1, chunk) != 1 ||
      chunk[0] != static_cast<hsize_t>(kChunkRows) || ds.getFloatType().getSize() != 8) {
    throw DataError(column +
                    " is not stored as slowpipe writes its columns (float64 in chunks of " +
                    std::to_string(kChunkRows) + " rows)");
  }
  hsize_t dims[1] = {0};
  space.getSimpleExtentDims(dims);
  const int64_t extent = static_cast<int64_t>(dims[0]);
  if (extent < rows) {
    throw DataError(column + " holds " + std::to_string(extent) +
                    " values but the table's 'rows' attribute says " + std::to_string(rows));
  }
  return extent;
}

// The column's 'index' attribute (its place in the table); the largest
// int64 when it has none.
int64_t read_column_index(const H5::DataSet& ds, const std::string& column) {
  int64_t index = std::numeric_limits<int64_t>::max();
  if (ds.attrExists("index")) {
    H5::Attribute attr = ds.openAttribute("index");
    if (attr.getTypeClass() != H5T_INTEGER || attr.getSpace().getSimpleExtentNpoints() != 1) {
      throw DataError(column + ": its 'index' attribute is not one integer");
    }
    attr.read(H5::PredType::NATIVE_INT64, &index);
  }
  return index;
}

}  // namespace

StoredTable inspect_table(const std::string& path, const H5::Group& group,
                          const std::string& name) {
  const std::string where = "run log " + path + ": table '" + name + "'";
  StoredTable out;
  check_attribute_messages(group.getId(), where);
  out.rows = read_row_count(path, group, where);
  const hsize_t n = group.getNumObjs();
  for (hsize_t i = 0; i < n; ++i) {
    const std::string member = group.getObjnameByIdx(i);
    H5::DataSet ds;
    if (!open_column(group, member, where, ds, out.unreadable)) continue;
    const std::string column = "run log " + path + ": column " + name + "/" + member;
    check_attribute_messages(ds.getId(), column);
    const int64_t extent = check_column_layout(ds, column, out.rows);
    const int64_t index = read_column_index(ds, column);
    out.columns.push_back(StoredColumn{index,
                                       ColumnInfo{member, read_string_attribute(ds, "unit", column),
                                                  read_string_attribute(ds, "description", column)},
                                       ds, extent});
  }
  std::stable_sort(out.columns.begin(), out.columns.end(),
                   [](const StoredColumn& a, const StoredColumn& b) { return a.index < b.index; });
  return out;
}

std::string run_status(const H5::H5File& file) {
  check_attribute_messages(file.getId(), "run log " + file.getFileName() + ": the root group");
  if (!file.attrExists("status")) return "";
  H5::Attribute attr = file.openAttribute("status");
  if (attr.getTypeClass() != H5T_STRING) return "";
  return read_one_string(attr.getId(), file.getId(), /*attribute=*/true, "attribute 'status'");
}

}  // namespace detail

std::map<std::string, int64_t> read_row_counts(const std::string& path) {
  const std::vector<std::string> tables = list_tables(path);
  return with_file(path, [&](H5::H5File& file) {
    std::map<std::string, int64_t> out;
    for (const auto& t : tables) out[t] = detail::inspect_table(path, file.openGroup(t), t).rows;
    return out;
  });
}

namespace {

// Why `table` is not a table of the run log: UsageError for a name the user got
// wrong, DataError when the file should have it (a member of that name that is
// not a table, or a run log whose train/eval table is missing).
[[noreturn]] void throw_missing_table(const std::string& path, const std::string& table,
                                      const std::vector<std::string>& tables) {
  with_file(path, [&](H5::H5File& file) {
    if (table != kBlobGroup && file.nameExists(table)) {
      std::string why = "is not a table";
      try {
        if (file.childObjType(table) != H5O_TYPE_GROUP) {
          why = "is not a group";
        } else {
          const H5::Group group = file.openGroup(table);
          detail::check_attribute_messages(group.getId(),
                                           "run log " + path + ": table '" + table + "'");
          if (!group.attrExists("rows")) why = "has no 'rows' attribute";
        }
      } catch (const H5::Exception&) {
        why = "cannot be read (" + hdf5_error_cause() + ")";
      }
      throw DataError("run log " + path + ": table '" + table + "' " + why);
    }
    bool run_log = false;  // written by `slowpipe train`: it has config.* attributes
    detail::check_attribute_messages(file.getId(), "run log " + path + ": the root group");
    const int n = file.getNumAttrs();
    for (int i = 0; i < n && !run_log; ++i) {
      run_log = file.openAttribute(static_cast<unsigned>(i)).getName().rfind("config.", 0) == 0;
    }
    if (run_log && (table == "train" || table == "eval")) {
      throw DataError("run log " + path + " has no '" + table + "' table (tables: " + join(tables) +
                      "): the file is damaged, or its run was killed before it logged anything");
    }
    return 0;
  });
  throw UsageError("run log " + path + " has no table '" + table + "'; tables: " + join(tables));
}

}  // namespace

Table read_table(const std::string& path, const std::string& table) {
  const std::vector<std::string> tables = list_tables(path);
  if (std::find(tables.begin(), tables.end(), table) == tables.end()) {
    throw_missing_table(path, table, tables);
  }
  return with_file(path, [&](H5::H5File& file) {
    const detail::StoredTable stored = detail::inspect_table(path, file.openGroup(table), table);
    // Only a run that did not finish can hold a column a kill cut short.
    const std::string status = detail::run_status(file);
    const bool finished = !status.empty() && status != "running";
    const auto unreadable = [&](const std::string& column, const std::string& cause) {
      if (finished) {
        throw DataError("run log " + path + ": column " + table + "/" + column +
                        " is unreadable (" + (cause.empty() ? "damaged" : cause) +
                        ") in a run whose status is '" + status + "'");
      }
    };
    Table out;
    for (const auto& name : stored.unreadable) {
      unreadable(name, "its header cannot be read");
      out.skipped.push_back(name);
    }
    const hsize_t start[1] = {0};
    const hsize_t count[1] = {static_cast<hsize_t>(stored.rows)};
    for (const auto& c : stored.columns) {
      std::vector<double> values(static_cast<size_t>(stored.rows));  // [rows]
      try {
        if (stored.rows > 0) {
          H5::DataSpace space = c.dataset.getSpace();
          space.selectHyperslab(H5S_SELECT_SET, count, start);
          c.dataset.read(values.data(), H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, count),
                         space);
        }
      } catch (const H5::Exception&) {
        // Chunks are allocated when a column is created; a column whose chunks
        // cannot be read was being created when the writer died.
        unreadable(c.info.name, hdf5_error_cause());
        out.skipped.push_back(c.info.name);
        continue;
      }
      out.columns.push_back(c.info);
      out.values.push_back(std::move(values));
    }
    return out;
  });
}

std::vector<std::string> list_blobs(const std::string& path) {
  return with_file(path, [](H5::H5File& file) {
    std::vector<std::string> names;
    if (!file.nameExists(kBlobGroup)) return names;
    H5::Group blobs = file.openGroup(kBlobGroup);
    const hsize_t n = blobs.getNumObjs();
    for (hsize_t i = 0; i < n; ++i) names.push_back(blobs.getObjnameByIdx(i));
    return names;
  });
}

std::string read_text(const std::string& path, const std::string& name) {
  const std::vector<std::string> names = list_blobs(path);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw UsageError("run log " + path + " has no blob '" + name + "'; blobs: " + join(names));
  }
  return with_file(path, [&](H5::H5File& file) {
    const H5::Group blobs = file.openGroup(kBlobGroup);
    detail::check_object_header(blobs.getId(), name, "run log " + path + ": blob '" + name + "'");
    const H5::DataSet ds = blobs.openDataSet(name);
    return read_one_string(ds.getId(), ds.getId(), /*attribute=*/false,
                           "run log " + path + ": blob '" + name + "'");
  });
}

void write_tsv(const Table& table, std::ostream& out) {
  constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53
  for (size_t c = 0; c < table.columns.size(); ++c) {
    out << (c == 0 ? "" : "\t") << table.columns[c].name;
  }
  out << '\n';
  const size_t rows = table.rows();
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const double v = table.values[c][r];
      if (c > 0) out << '\t';
      if (std::isnan(v)) {
        out << "nan";
      } else if (std::isinf(v)) {
        out << (v > 0 ? "inf" : "-inf");
      } else if (v == std::trunc(v) && std::fabs(v) < kExactIntegerLimit) {
        out << static_cast<long long>(v);
      } else {
        out << shortest(v);
      }
    }
    out << '\n';
  }
}

}  // namespace slowpipe::runlog
