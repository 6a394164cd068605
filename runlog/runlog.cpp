// The run log writer: one HDF5 file per run, written through the HDF5 C++ API.
//
// Layout (docs/hdf5-schema.md): root attributes (config and provenance), one
// group per table holding one chunked, extendable float64 dataset per column,
// and /blobs for text. Rows are buffered in memory and written by flush().
// Every string (attribute or blob) is a fixed-length, null-terminated UTF-8
// string sized to its value: the file has no global heap, so no variable-length
// data for HDF5 1.10 to misread when the file is damaged.
//
// Kill safety (a run killed with SIGKILL keeps every flushed row), without SWMR
// (docs/hdf5-schema.md explains the choice):
//  - datasets grow by whole chunks of kChunkRows rows, allocated and NaN-filled
//    when they grow, so most flushes only write into chunks that exist;
//  - each table's "rows" attribute is raised only after H5Fflush has put the
//    rows on disk, and then flushed again. Readers read "rows" rows;
//  - structure changes (table, column, blob) are flushed at once, allocate from
//    large blocks the superblock already covers, and leave the table group's
//    header alone (column order is each column's "index" attribute).
// A kill inside a structure change can lose that new column or blob, which
// readers then skip; it does not cost flushed rows. Compression filters are
// left out on purpose: a compressed chunk moves when it grows.
//
// Resume (RunLog::reopen): the file is opened read-write with the same access
// settings, every table's layout is read back and checked (runlog_tables.h),
// and a table is cut by lowering its "rows" attribute, flushed at once; the
// cut rows' data stays in the datasets until appends overwrite it (readers
// never look past "rows") or a clean close trims the extent.
#include "runlog/runlog.h"

#include <H5Cpp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "common/errors.h"
#include "runlog/internal/runlog_tables.h"

namespace slowpipe::runlog {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr hsize_t kAllocationBlockBytes = hsize_t{64} * 1024;
constexpr size_t kGroupNameHeapBytes = 4096;

// Longest string attribute value: an attribute lives in one object header
// message, whose size field is 16 bits (the rest is left for the name, type
// and dataspace). Longer text goes to put_text.
constexpr size_t kMaxAttributeBytes = 60000;

// Every string in a run log is fixed-length, null-terminated UTF-8 sized to
// its value plus the terminating NUL (so "" is one byte): nothing lives in the
// global heap, whose damaged forms crash HDF5 1.10 (docs/hdf5-schema.md).
H5::StrType fixed_string_type(const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, value.size() + 1);
  type.setCset(H5T_CSET_UTF8);
  type.setStrpad(H5T_STR_NULLTERM);
  return type;
}

// A NUL byte would end the stored string early: refused instead of cut.
void refuse_nul(const std::string& path, const std::string& what, const std::string& value) {
  const size_t at = value.find('\0');
  if (at != std::string::npos) {
    throw UsageError("run log " + path + ": " + what + " holds a NUL byte (at byte " +
                     std::to_string(at) + "); run-log strings are NUL-terminated");
  }
}

// A value set_attribute or declare may store: no NUL, at most kMaxAttributeBytes.
void check_attribute_value(const std::string& path, const std::string& what,
                           const std::string& value) {
  refuse_nul(path, what, value);
  if (value.size() > kMaxAttributeBytes) {
    throw UsageError("run log " + path + ": " + what + " is " + std::to_string(value.size()) +
                     " bytes, more than an attribute holds (" + std::to_string(kMaxAttributeBytes) +
                     "); store long text with put_text");
  }
}

// Names become HDF5 link names and TSV headers: no '/', no whitespace.
bool valid_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

void write_string_attribute(H5::H5Object& object, const std::string& key,
                            const std::string& value) {
  if (object.attrExists(key)) object.removeAttr(key);
  const H5::StrType type = fixed_string_type(value);
  H5::Attribute attr = object.createAttribute(key, type, H5::DataSpace(H5S_SCALAR));
  attr.write(type, value.c_str());  // size() + 1 bytes, the NUL included
}

void write_double_attribute(H5::H5Object& object, const std::string& key, double value) {
  if (object.attrExists(key)) object.removeAttr(key);
  H5::Attribute attr =
      object.createAttribute(key, H5::PredType::IEEE_F64LE, H5::DataSpace(H5S_SCALAR));
  attr.write(H5::PredType::NATIVE_DOUBLE, &value);
}

// File access settings of every writer (create and reopen).
H5::FileAccPropList writer_access() {
  H5::FileAccPropList access;
  // No HDF5 file lock: readers (slowpipe export, h5py, h5dump) may read a live
  // run without HDF5_USE_FILE_LOCKING=FALSE; overwrite refusal guards the name.
  H5Pset_file_locking(access.getId(), /*use_file_locking=*/false,
                      /*ignore_when_disabled=*/true);
  // Large allocation blocks: new metadata and chunks are carved out of space
  // the superblock already covers, so a kill inside a flush rarely leaves an
  // object pointing past the stored end of file.
  H5Pset_meta_block_size(access.getId(), kAllocationBlockBytes);
  H5Pset_small_data_block_size(access.getId(), kAllocationBlockBytes);
  return access;
}

void write_int_attribute(H5::H5Object& object, const std::string& key, int64_t value) {
  H5::Attribute attr =
      object.createAttribute(key, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR));
  attr.write(H5::PredType::NATIVE_INT64, &value);
}

}  // namespace

namespace {

thread_local std::string last_hdf5_cause;

// Installed in place of HDF5's stderr printer: keeps the deepest message of the
// failed call's error stack (the root cause, e.g. "file signature not found").
herr_t record_hdf5_error(hid_t stack, void* /*client_data*/) {
  last_hdf5_cause.clear();
  H5Ewalk2(
      stack, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* err, void*) -> herr_t {
        if (err->desc != nullptr && err->desc[0] != '\0') last_hdf5_cause = err->desc;
        return 0;
      },
      nullptr);
  return 0;
}

}  // namespace

void silence_hdf5_errors() {
  // Per thread: HDF5's automatic error handler is per thread in thread-safe builds.
  thread_local const bool silenced = [] {
    H5::Exception::dontPrint();
    H5Eset_auto2(H5E_DEFAULT, record_hdf5_error, nullptr);
    return true;
  }();
  (void)silenced;
}

std::string hdf5_error_cause() {
  std::string cause;
  cause.swap(last_hdf5_cause);
  return cause;
}

struct RunLog::Impl {
  struct Column {
    ColumnInfo info;
    H5::DataSet dataset;
    std::vector<double> pending;  // [pending_rows]
  };
  struct TableState {
    H5::Group group;
    std::vector<Column> columns;
    std::map<std::string, size_t> index;  // column name -> position
    int64_t flushed_rows = 0;             // complete rows on disk ("rows" attribute)
    int64_t pending_rows = 0;             // rows buffered in memory
    int64_t capacity_rows = 0;            // dataset extent, a multiple of kChunkRows
    int64_t next_index = 0;               // "index" attribute of the next new column
  };

  std::string path;
  int flush_every = 10;
  int64_t rows_since_flush = 0;
  H5::H5File file;
  std::map<std::string, TableState> tables;
  H5::Group blobs;
  bool has_blobs = false;
  bool ready = false;  // open and consistent: the destructor flushes and trims

  // Runs `body`, turning HDF5 exceptions into runtime_error naming the file.
  template <typename F>
  auto guard(const std::string& what, F&& body) -> decltype(body()) {
    hdf5_error_cause();  // drop any stale cause
    try {
      return body();
    } catch (const H5::Exception& e) {
      const std::string cause = hdf5_error_cause();
      throw std::runtime_error("run log " + path + ": " + what + " failed (" + e.getFuncName() +
                               (cause.empty() ? "" : ": " + cause) + ")");
    }
  }

  TableState& table_or_throw(const std::string& table) {
    auto it = tables.find(table);
    if (it == tables.end()) {
      throw UsageError("run log " + path + ": table '" + table + "' was not declared");
    }
    return it->second;
  }

  void add_column(TableState& t, const ColumnInfo& info) {
    const hsize_t dims[1] = {static_cast<hsize_t>(t.capacity_rows)};
    const hsize_t max_dims[1] = {H5S_UNLIMITED};
    const hsize_t chunk[1] = {static_cast<hsize_t>(kChunkRows)};
    H5::DSetCreatPropList props;
    props.setChunk(1, chunk);
    props.setFillValue(H5::PredType::NATIVE_DOUBLE, &kNaN);
    // Chunks are allocated (NaN-filled) when the dataset is created or grown,
    // never when a flush first writes into them: a late column's first chunk,
    // which also covers rows already counted, is on disk before those rows are
    // read through it.
    props.setAllocTime(H5D_ALLOC_TIME_EARLY);
    Column column;
    column.info = info;
    column.dataset = t.group.createDataSet(info.name, H5::PredType::IEEE_F64LE,
                                           H5::DataSpace(1, dims, max_dims), props);
    write_string_attribute(column.dataset, "unit", info.unit);
    write_string_attribute(column.dataset, "description", info.description);
    // Column order lives with each column, never in the table group's header,
    // so declaring a column leaves the group header (and its "rows") untouched.
    write_int_attribute(column.dataset, "index", t.next_index++);
    column.pending.assign(static_cast<size_t>(t.pending_rows), kNaN);
    t.index[info.name] = t.columns.size();
    t.columns.push_back(std::move(column));
  }

  // Writes the buffered rows of one table into its datasets (no H5Fflush).
  void write_pending(TableState& t) {
    if (t.pending_rows == 0) return;
    const int64_t needed = t.flushed_rows + t.pending_rows;
    if (needed > t.capacity_rows) {
      const int64_t capacity = (needed + kChunkRows - 1) / kChunkRows * kChunkRows;
      const hsize_t dims[1] = {static_cast<hsize_t>(capacity)};
      for (auto& c : t.columns) c.dataset.extend(dims);
      t.capacity_rows = capacity;
    }
    const hsize_t start[1] = {static_cast<hsize_t>(t.flushed_rows)};
    const hsize_t count[1] = {static_cast<hsize_t>(t.pending_rows)};
    H5::DataSpace memory(1, count);
    for (auto& c : t.columns) {
      H5::DataSpace space = c.dataset.getSpace();
      space.selectHyperslab(H5S_SELECT_SET, count, start);
      c.dataset.write(c.pending.data(), H5::PredType::NATIVE_DOUBLE, memory, space);
      c.pending.clear();
    }
  }

  void flush() {
    for (auto& [name, t] : tables) write_pending(t);
    file.flush(H5F_SCOPE_GLOBAL);  // the rows' data is on disk ...
    bool raised = false;
    for (auto& [name, t] : tables) {
      if (t.pending_rows == 0) continue;
      t.flushed_rows += t.pending_rows;
      t.pending_rows = 0;
      H5::Attribute rows = t.group.openAttribute("rows");
      rows.write(H5::PredType::NATIVE_INT64, &t.flushed_rows);
      raised = true;
    }
    if (raised) file.flush(H5F_SCOPE_GLOBAL);  // ... before "rows" counts them
    rows_since_flush = 0;
  }

  // Links whose object cannot be read ("table" or "table/column"): creations a
  // kill cut short, found by reopen(). Neither HDF5's H5Ldelete nor H5Lmove can
  // remove such a link (both need the object's header), so declaring that name
  // again is refused; readers skip them while the run is unfinished.
  std::set<std::string> broken;

  void refuse_broken(const std::string& name) const {
    if (broken.count(name) != 0) {
      throw DataError("run log " + path + ": " + name +
                      " is unreadable (a kill cut its creation short) and cannot be declared "
                      "again; start the run anew");
    }
  }

  // Reads back the tables and blobs of an existing file (reopen), checks
  // `keep_rows` against them, then cuts the tables and flushes.
  void load(const std::map<std::string, int64_t>& keep_rows) {
    const hsize_t n = file.getNumObjs();
    std::vector<std::string> names;
    for (hsize_t i = 0; i < n; ++i) names.push_back(file.getObjnameByIdx(i));
    for (const auto& name : names) {
      H5O_type_t kind = H5O_TYPE_UNKNOWN;
      try {
        kind = file.childObjType(name);
      } catch (const H5::Exception&) {
        broken.insert(name);  // a table or blob group a kill cut short
        continue;
      }
      if (kind != H5O_TYPE_GROUP) continue;
      H5::Group group = file.openGroup(name);
      if (name == kBlobGroup) {
        blobs = group;
        has_blobs = true;
        continue;
      }
      if (!group.attrExists("rows")) {
        // Created, but killed before its "rows" attribute: no table yet.
        if (group.getNumObjs() == 0 && H5Ldelete(file.getId(), name.c_str(), H5P_DEFAULT) < 0) {
          broken.insert(name);
        }
        continue;
      }
      detail::StoredTable stored = detail::inspect_table(path, group, name);
      for (const auto& column : stored.unreadable) broken.insert(name + "/" + column);
      TableState t;
      t.group = group;
      t.flushed_rows = stored.rows;
      t.capacity_rows = std::numeric_limits<int64_t>::max();
      for (auto& c : stored.columns) {
        t.capacity_rows = std::min(t.capacity_rows, c.extent);
        t.next_index = std::max(t.next_index, c.index + 1);
        Column column;
        column.info = c.info;
        column.dataset = c.dataset;
        t.index[c.info.name] = t.columns.size();
        t.columns.push_back(std::move(column));
      }
      if (t.columns.empty()) t.capacity_rows = 0;
      tables.emplace(name, std::move(t));
    }
    for (const auto& [name, keep] : keep_rows) {
      auto it = tables.find(name);
      const int64_t have = it == tables.end() ? 0 : it->second.flushed_rows;
      if (keep > have) {
        throw DataError("run log " + path + ": table '" + name + "' has " + std::to_string(have) +
                        " rows, fewer than the " + std::to_string(keep) + " to keep");
      }
    }
    for (const auto& [name, keep] : keep_rows) {
      auto it = tables.find(name);
      if (it == tables.end()) continue;  // keep == 0
      it->second.flushed_rows = keep;
      it->second.group.openAttribute("rows").write(H5::PredType::NATIVE_INT64, &keep);
    }
    file.flush(H5F_SCOPE_GLOBAL);
  }

  // On a clean close the extent shrinks to the rows, so h5dump/h5py see no padding.
  void trim() {
    for (auto& [name, t] : tables) {
      const hsize_t dims[1] = {static_cast<hsize_t>(t.flushed_rows)};
      for (auto& c : t.columns) {
        if (H5Dset_extent(c.dataset.getId(), dims) < 0) {
          throw std::runtime_error("run log " + path + ": cannot trim " + name + "/" + c.info.name +
                                   " (" + hdf5_error_cause() + ")");
        }
      }
      t.capacity_rows = t.flushed_rows;
    }
  }
};

RunLog::RunLog(const std::string& path, bool overwrite, int flush_every)
    : impl_(std::make_unique<Impl>()) {
  silence_hdf5_errors();
  if (flush_every < 1) {
    throw UsageError("run log " + path + ": flush_every must be >= 1, got " +
                     std::to_string(flush_every));
  }
  impl_->path = path;
  impl_->flush_every = flush_every;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) && !overwrite) {
    throw UsageError("run log " + path +
                     " already exists; refusing to overwrite it (choose another run.out or "
                     "ask for overwrite)");
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw UsageError("run log " + path + ": cannot create folder " + parent.string() + ": " +
                       ec.message());
    }
  }
  impl_->guard("create", [&] {
    const H5::FileAccPropList access = writer_access();
    // Symbol-table nodes of 2 x 64 entries: a table of up to 128 columns never
    // splits its group's node when a column is declared.
    H5::FileCreatPropList create;
    create.setSymk(/*int_nodes_k=*/16, /*leaf_nodes_k=*/64);
    impl_->file = H5::H5File(path, overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, create, access);
    impl_->file.flush(H5F_SCOPE_GLOBAL);
    return 0;
  });
  impl_->ready = true;
}

RunLog::RunLog() : impl_(std::make_unique<Impl>()) {}

std::unique_ptr<RunLog> RunLog::reopen(const std::string& path,
                                       const std::map<std::string, int64_t>& keep_rows,
                                       int flush_every) {
  silence_hdf5_errors();
  hdf5_error_cause();  // drop any stale cause
  if (flush_every < 1) {
    throw UsageError("run log " + path + ": flush_every must be >= 1, got " +
                     std::to_string(flush_every));
  }
  for (const auto& [table, keep] : keep_rows) {
    if (keep < 0) {
      throw UsageError("run log " + path + ": cannot keep " + std::to_string(keep) +
                       " rows of table '" + table + "'");
    }
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError("run log " + path + ": no such file to continue");
  if (!fs::is_regular_file(path, ec)) throw UsageError("run log " + path + ": not a file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UsageError("run log " + path + " is not an HDF5 file");
  std::unique_ptr<RunLog> log(new RunLog());
  Impl& impl = *log->impl_;
  impl.path = path;
  impl.flush_every = flush_every;
  try {
    impl.file = H5::H5File(path, H5F_ACC_RDWR, H5::FileCreatPropList::DEFAULT, writer_access());
    impl.load(keep_rows);
  } catch (const H5::Exception& e) {
    const std::string cause = hdf5_error_cause();
    throw DataError("run log " + path + " cannot be continued: damaged or unreadable (" +
                    e.getFuncName() + (cause.empty() ? "" : ": " + cause) + ")");
  }
  impl.ready = true;
  return log;
}

RunLog::~RunLog() {
  if (!impl_->ready) return;  // a reopen() that failed: leave the file as it was
  try {
    impl_->guard("close", [&] {
      impl_->flush();
      impl_->trim();
      impl_->file.flush(H5F_SCOPE_GLOBAL);
      return 0;
    });
  } catch (const std::exception& e) {
    std::cerr << "slowpipe: " << e.what() << "\n";
  }
}

void RunLog::set_attribute(const std::string& key, const std::string& value) {
  if (key.empty()) throw UsageError("run log " + impl_->path + ": empty attribute name");
  check_attribute_value(impl_->path, "attribute " + key, value);
  impl_->guard("attribute " + key, [&] {
    write_string_attribute(impl_->file, key, value);
    return 0;
  });
}

void RunLog::set_attribute(const std::string& key, double value) {
  if (key.empty()) throw UsageError("run log " + impl_->path + ": empty attribute name");
  impl_->guard("attribute " + key, [&] {
    write_double_attribute(impl_->file, key, value);
    return 0;
  });
}

void RunLog::declare(const std::string& table, const std::vector<ColumnInfo>& columns) {
  const std::string& path = impl_->path;
  if (!valid_name(table) || table == kBlobGroup) {
    throw UsageError("run log " + path + ": invalid table name '" + table +
                     "' (letters, digits, '_', '-', '.'; not '" + kBlobGroup + "')");
  }
  for (const auto& c : columns) {
    if (!valid_name(c.name)) {
      throw UsageError("run log " + path + ": invalid column name '" + c.name + "' in table " +
                       table + " (letters, digits, '_', '-', '.')");
    }
    check_attribute_value(path, "the unit of column " + table + "/" + c.name, c.unit);
    check_attribute_value(path, "the description of column " + table + "/" + c.name, c.description);
  }
  impl_->guard("declare " + table, [&] {
    auto it = impl_->tables.find(table);
    if (it == impl_->tables.end()) {
      impl_->refuse_broken(table);
      Impl::TableState t;
      // Room for the names of ~200 columns, so the group's name heap never moves.
      t.group = impl_->file.createGroup(table, kGroupNameHeapBytes);
      write_int_attribute(t.group, "rows", 0);
      it = impl_->tables.emplace(table, std::move(t)).first;
      if (columns.empty()) impl_->file.flush(H5F_SCOPE_GLOBAL);
    }
    Impl::TableState& t = it->second;
    bool added = false;
    for (const auto& c : columns) {
      auto found = t.index.find(c.name);
      if (found != t.index.end()) {
        const ColumnInfo& old = t.columns[found->second].info;
        if (old.unit != c.unit) {
          throw UsageError("run log " + path + ": column " + table + "/" + c.name +
                           " declared with unit '" + c.unit + "' but it has unit '" + old.unit +
                           "'");
        }
        continue;
      }
      impl_->refuse_broken(table + "/" + c.name);
      impl_->add_column(t, c);
      added = true;
    }
    if (added) impl_->file.flush(H5F_SCOPE_GLOBAL);  // structure goes to disk at once
    return 0;
  });
}

void RunLog::append(const std::string& table, const std::map<std::string, double>& row) {
  Impl::TableState& t = impl_->table_or_throw(table);
  for (const auto& [name, value] : row) {
    if (t.index.count(name) == 0) {
      throw UsageError("run log " + impl_->path + ": column '" + name + "' of table " + table +
                       " was not declared");
    }
  }
  for (auto& c : t.columns) c.pending.push_back(kNaN);
  for (const auto& [name, value] : row) t.columns[t.index[name]].pending.back() = value;
  ++t.pending_rows;
  if (++impl_->rows_since_flush >= impl_->flush_every) flush();
}

void RunLog::put_text(const std::string& name, const std::string& text) {
  if (!valid_name(name)) {
    throw UsageError("run log " + impl_->path + ": invalid blob name '" + name +
                     "' (letters, digits, '_', '-', '.')");
  }
  refuse_nul(impl_->path, "blob " + name, text);
  impl_->guard("put_text " + name, [&] {
    if (!impl_->has_blobs) {
      impl_->blobs = impl_->file.createGroup(kBlobGroup);
      impl_->has_blobs = true;
    }
    if (impl_->blobs.nameExists(name)) impl_->blobs.unlink(name);
    // One scalar fixed-length string of the text's size: h5dump prints it
    // whole, and it holds no global heap reference.
    const H5::StrType type = fixed_string_type(text);
    H5::DataSet ds = impl_->blobs.createDataSet(name, type, H5::DataSpace(H5S_SCALAR));
    ds.write(text.c_str(), type);
    impl_->file.flush(H5F_SCOPE_GLOBAL);
    return 0;
  });
}

void RunLog::flush() {
  impl_->guard("flush", [&] {
    impl_->flush();
    return 0;
  });
}

const std::string& RunLog::path() const {
  return impl_->path;
}

int64_t RunLog::rows(const std::string& table) const {
  auto it = impl_->tables.find(table);
  return it == impl_->tables.end() ? 0 : it->second.flushed_rows + it->second.pending_rows;
}

int64_t RunLog::flushed_rows(const std::string& table) const {
  auto it = impl_->tables.find(table);
  return it == impl_->tables.end() ? 0 : it->second.flushed_rows;
}

}  // namespace slowpipe::runlog
