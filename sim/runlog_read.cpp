// Reading a run log back: root attributes, tables, text blobs, and TSV output.
//
// The reader trusts each table's "rows" attribute (the count of complete rows,
// see runlog.cpp) rather than the dataset extent, which runs ahead of the data
// while a run is alive or after it was killed. Files are opened without HDF5's
// file lock, so a live run can be exported; what it sees is the last flush.
// Missing or non-HDF5 files are UsageErrors; HDF5 failures inside a file that
// opened are DataErrors naming the file and HDF5's own cause.
#include <H5Cpp.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "common/errors.h"
#include "sim/runlog.h"

namespace slowpipe::sim {
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

std::string read_string_attribute(const H5::H5Object& object, const std::string& key) {
  if (!object.attrExists(key)) return "";
  H5::Attribute attr = object.openAttribute(key);
  std::string value;
  attr.read(attr.getStrType(), value);
  return value;
}

int64_t read_int_attribute(const H5::H5Object& object, const std::string& key, int64_t fallback) {
  if (!object.attrExists(key)) return fallback;
  int64_t value = fallback;
  object.openAttribute(key).read(H5::PredType::NATIVE_INT64, &value);
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
  return with_file(path, [](H5::H5File& file) {
    std::map<std::string, std::string> out;
    const int n = file.getNumAttrs();
    for (int i = 0; i < n; ++i) {
      H5::Attribute attr = file.openAttribute(static_cast<unsigned>(i));
      const std::string name = attr.getName();
      switch (attr.getTypeClass()) {
        case H5T_STRING: {
          std::string value;
          attr.read(attr.getStrType(), value);
          out[name] = value;
          break;
        }
        case H5T_FLOAT: {
          double value = 0;
          attr.read(H5::PredType::NATIVE_DOUBLE, &value);
          out[name] = shortest(value);
          break;
        }
        case H5T_INTEGER: {
          int64_t value = 0;
          attr.read(H5::PredType::NATIVE_INT64, &value);
          out[name] = std::to_string(value);
          break;
        }
        default:
          break;  // not written by slowpipe
      }
    }
    return out;
  });
}

std::vector<std::string> list_tables(const std::string& path) {
  return with_file(path, [](H5::H5File& file) {
    std::vector<std::string> tables;
    const hsize_t n = file.getNumObjs();
    for (hsize_t i = 0; i < n; ++i) {
      const std::string name = file.getObjnameByIdx(i);
      if (name == kBlobGroup) continue;
      try {
        if (file.childObjType(name) != H5O_TYPE_GROUP) continue;
        if (file.openGroup(name).attrExists("rows")) tables.push_back(name);
      } catch (const H5::Exception&) {
        hdf5_error_cause();  // a table whose creation a kill cut short: not a table
      }
    }
    return tables;
  });
}

Table read_table(const std::string& path, const std::string& table) {
  const std::vector<std::string> tables = list_tables(path);
  if (std::find(tables.begin(), tables.end(), table) == tables.end()) {
    throw UsageError("run log " + path + " has no table '" + table + "'; tables: " + join(tables));
  }
  return with_file(path, [&](H5::H5File& file) {
    H5::Group group = file.openGroup(table);
    int64_t rows = 0;
    group.openAttribute("rows").read(H5::PredType::NATIVE_INT64, &rows);
    struct Found {
      int64_t index;  // declaration order ("index" attribute)
      ColumnInfo info;
      H5::DataSet dataset;
    };
    std::vector<Found> found;
    std::vector<std::string> skipped;
    const hsize_t n = group.getNumObjs();
    for (hsize_t i = 0; i < n; ++i) {
      std::string name = "#" + std::to_string(i);
      try {
        name = group.getObjnameByIdx(i);
        if (group.childObjType(name) != H5O_TYPE_DATASET) continue;
        H5::DataSet ds = group.openDataSet(name);
        H5::DataSpace space = ds.getSpace();
        if (space.getSimpleExtentNdims() != 1) continue;
        hsize_t dims[1] = {0};
        space.getSimpleExtentDims(dims);
        Found f{read_int_attribute(ds, "index", std::numeric_limits<int64_t>::max()),
                ColumnInfo{name, read_string_attribute(ds, "unit"),
                           read_string_attribute(ds, "description")},
                ds};
        rows = std::min<int64_t>(rows, static_cast<int64_t>(dims[0]));
        found.push_back(std::move(f));
      } catch (const H5::Exception&) {
        // A column whose creation a kill cut short (its link reached the disk,
        // its header did not). It holds no flushed row; leave it out.
        hdf5_error_cause();
        skipped.push_back(name);
      }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const Found& a, const Found& b) { return a.index < b.index; });
    Table out;
    std::vector<H5::DataSet> datasets;
    for (auto& f : found) {
      out.columns.push_back(std::move(f.info));
      datasets.push_back(f.dataset);
    }
    rows = std::max<int64_t>(rows, 0);
    const hsize_t start[1] = {0};
    const hsize_t count[1] = {static_cast<hsize_t>(rows)};
    Table read;
    read.skipped = std::move(skipped);
    for (size_t c = 0; c < datasets.size(); ++c) {
      std::vector<double> values(static_cast<size_t>(rows));  // [rows]
      try {
        if (rows > 0) {
          H5::DataSpace space = datasets[c].getSpace();
          space.selectHyperslab(H5S_SELECT_SET, count, start);
          datasets[c].read(values.data(), H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, count),
                           space);
        }
      } catch (const H5::Exception&) {
        // Chunks are allocated when a column is created; a column whose chunks
        // cannot be read was being created when the writer died.
        hdf5_error_cause();
        read.skipped.push_back(out.columns[c].name);
        continue;
      }
      read.columns.push_back(out.columns[c]);
      read.values.push_back(std::move(values));
    }
    out = std::move(read);
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
    H5::DataSet ds = file.openGroup(kBlobGroup).openDataSet(name);
    std::string text;
    ds.read(text, ds.getStrType());
    return text;
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

}  // namespace slowpipe::sim
