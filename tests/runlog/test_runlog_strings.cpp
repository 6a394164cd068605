// Strings in the run log: every string a new log stores (root attributes,
// column unit/description, blobs) is fixed-length, so the file has no global
// heap; values round-trip byte for byte; older logs written with
// variable-length strings still read, and a damaged global heap in one is a
// DataError before HDF5 1.10 reads it (it would crash or loop). Also the
// generator of the fuzz seeds in the current format (fuzz/README.md).
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/errors.h"
#include "runlog/runlog.h"
#include "tests/runlog/runlog_scratch.h"

namespace fs = std::filesystem;
using slowpipe::DataError;
using slowpipe::UsageError;
using slowpipe::runlog::RunLog;
namespace runlog = slowpipe::runlog;

namespace {

struct Walk {
  std::string object;              // the object being visited
  std::vector<std::string> found;  // "object: attribute" / "object (dataset)"
};

herr_t on_attribute(hid_t owner, const char* name, const H5A_info_t*, void* data) {
  auto& walk = *static_cast<Walk*>(data);
  const hid_t attr = H5Aopen(owner, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(attr);
  if (H5Tis_variable_str(type) != 0) walk.found.push_back(walk.object + ": " + name);
  H5Tclose(type);
  H5Aclose(attr);
  return 0;
}

herr_t on_object(hid_t root, const char* name, const H5O_info_t* info, void* data) {
  auto& walk = *static_cast<Walk*>(data);
  walk.object = name;
  const hid_t object = H5Oopen(root, name, H5P_DEFAULT);
  REQUIRE(object >= 0);
  REQUIRE(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, on_attribute, data) >= 0);
  if (info->type == H5O_TYPE_DATASET) {
    const hid_t type = H5Dget_type(object);
    if (H5Tis_variable_str(type) != 0) walk.found.push_back(walk.object + " (dataset)");
    H5Tclose(type);
  }
  H5Oclose(object);
  return 0;
}

// Every object of the file (the root too), each attribute and each dataset's
// own type: the ones stored as variable-length strings.
std::vector<std::string> variable_strings(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  Walk walk;
  REQUIRE(H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, on_object, &walk, H5O_INFO_BASIC) >= 0);
  H5Fclose(file);
  return walk.found;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spill(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A log as slowpipe wrote it before 2026-11-25: every string variable-length
// UTF-8 (the global heap holds them in this order: config.model.name, status,
// unit and description of train/step, then the blob).
void write_old_format_log(const std::string& path) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  const hid_t text = H5Tcopy(H5T_C_S1);
  H5Tset_size(text, H5T_VARIABLE);
  H5Tset_cset(text, H5T_CSET_UTF8);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const auto string_attribute = [&](hid_t owner, const char* key, const char* value) {
    const hid_t attr = H5Acreate2(owner, key, text, scalar, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Awrite(attr, text, &value) >= 0);
    H5Aclose(attr);
  };
  string_attribute(file, "config.model.name", "gpt");
  string_attribute(file, "status", "complete");
  const double lr = 0.25;
  const hid_t number =
      H5Acreate2(file, "config.optim.lr", H5T_IEEE_F64LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(H5Awrite(number, H5T_NATIVE_DOUBLE, &lr) >= 0);
  H5Aclose(number);

  const hid_t train = H5Gcreate2(file, "train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const int64_t rows = 3;
  const hid_t rows_attr =
      H5Acreate2(train, "rows", H5T_STD_I64LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(H5Awrite(rows_attr, H5T_NATIVE_INT64, &rows) >= 0);
  H5Aclose(rows_attr);
  const hsize_t dims[1] = {3}, max_dims[1] = {H5S_UNLIMITED}, chunk[1] = {1024};
  const hid_t space = H5Screate_simple(1, dims, max_dims);
  const hid_t props = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(props, 1, chunk);
  const hid_t step =
      H5Dcreate2(train, "step", H5T_IEEE_F64LE, space, H5P_DEFAULT, props, H5P_DEFAULT);
  const double values[3] = {1, 2, 3};
  REQUIRE(H5Dwrite(step, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0);
  string_attribute(step, "unit", "1");
  string_attribute(step, "description", "optimizer step");
  H5Dclose(step);
  H5Pclose(props);
  H5Sclose(space);
  H5Gclose(train);

  const hid_t blobs = H5Gcreate2(file, "blobs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t blob =
      H5Dcreate2(blobs, "calibration", text, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char* json = "{\"model\": \"measured\"}";
  REQUIRE(H5Dwrite(blob, text, H5S_ALL, H5S_ALL, H5P_DEFAULT, &json) >= 0);
  H5Dclose(blob);
  H5Gclose(blobs);
  H5Sclose(scalar);
  H5Tclose(text);
  REQUIRE(H5Fclose(file) >= 0);
}

// Offset of the (only) global heap collection in `bytes`.
size_t collection_at(const std::string& bytes) {
  const size_t at = bytes.find("GCOL");
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find("GCOL", at + 4) == std::string::npos);
  return at;
}

void put_le(std::string& bytes, size_t at, uint64_t value, int width) {
  for (int i = 0; i < width; ++i)
    bytes[at + static_cast<size_t>(i)] = static_cast<char>(value >> (8 * i));
}

}  // namespace

TEST_CASE("RunLog strings: a new log holds no variable-length string") {
  const std::string path = slowpipe::test::scratch("strings_fixed") + "/run.h5";
  {
    RunLog log(path, /*overwrite=*/false, /*flush_every=*/2);
    log.set_attribute("config.model.name", "gpt");
    log.set_attribute("status", "running");
    log.set_attribute("sim_time_s", 1.5);
    log.declare("train", {{"step", "1", "optimizer step"}, {"loss", "nats", ""}});
    for (int s = 1; s <= 3; ++s) log.append("train", {{"step", s}, {"loss", 1.0 / s}});
    log.put_text("calibration", "{\"model\": \"analytic\"}");
    log.set_attribute("status", "complete");
  }
  CHECK(variable_strings(path).empty());
  CHECK(slurp(path).find("GCOL") == std::string::npos);  // no global heap at all
  // Control: the walk finds the variable-length strings of an older log.
  const std::string old = slowpipe::test::scratch("strings_fixed_control") + "/old.h5";
  write_old_format_log(old);
  CHECK(variable_strings(old).size() == 5);
}

TEST_CASE("RunLog strings: attributes, units and blobs round-trip byte for byte") {
  const std::string path = slowpipe::test::scratch("strings_round_trip") + "/run.h5";
  const std::string long_value(50000, 'x');
  const std::string non_ascii = "\xce\xbb=0.5 \xe2\x86\x92 \xff\xfe raw bytes";
  std::string long_blob;
  for (int i = 0; long_blob.size() < 3000000; ++i) long_blob += std::to_string(i) + ",";
  {
    RunLog log(path, /*overwrite=*/false);
    log.set_attribute("empty", "");
    log.set_attribute("long", long_value);
    log.set_attribute("non_ascii", non_ascii);
    log.set_attribute("replaced", "a much longer first value");
    log.set_attribute("replaced", "short");
    log.set_attribute("grown", "");
    log.set_attribute("grown", long_value);
    log.declare("train", {{"step", "", ""}, {"loss", non_ascii, long_value}});
    log.append("train", {{"step", 1}, {"loss", 2}});
    log.put_text("empty", "");
    log.put_text("non_ascii", non_ascii);
    log.put_text("long", long_blob);
  }
  const auto attributes = runlog::read_attributes(path);
  CHECK(attributes.at("empty").empty());
  CHECK(attributes.at("long") == long_value);
  CHECK(attributes.at("non_ascii") == non_ascii);
  CHECK(attributes.at("replaced") == "short");
  CHECK(attributes.at("grown") == long_value);
  const runlog::Table train = runlog::read_table(path, "train");
  REQUIRE(train.columns.size() == 2);
  CHECK(train.columns[0].unit.empty());
  CHECK(train.columns[0].description.empty());
  CHECK(train.columns[1].unit == non_ascii);
  CHECK(train.columns[1].description == long_value);
  CHECK(runlog::read_text(path, "empty").empty());
  CHECK(runlog::read_text(path, "non_ascii") == non_ascii);
  CHECK(runlog::read_text(path, "long") == long_blob);
  CHECK(variable_strings(path).empty());
  // Stored as null-terminated fixed-length UTF-8 of the value's size + 1.
  H5::H5File file(path, H5F_ACC_RDONLY);
  const H5::StrType type = file.openAttribute("non_ascii").getStrType();
  CHECK(type.getSize() == non_ascii.size() + 1);
  CHECK(type.getStrpad() == H5T_STR_NULLTERM);
  CHECK(type.getCset() == H5T_CSET_UTF8);
  CHECK(file.openAttribute("empty").getStrType().getSize() == 1);
}

TEST_CASE("RunLog strings: what a fixed-length string cannot hold is refused, not cut") {
  const std::string path = slowpipe::test::scratch("strings_refused") + "/run.h5";
  {
    RunLog log(path, /*overwrite=*/false);
    const std::string with_nul("a\0b", 3);
    CHECK_THROWS_AS(log.set_attribute("nul", with_nul), UsageError);
    CHECK_THROWS_WITH(log.put_text("nul", with_nul), Catch::Contains("NUL byte (at byte 1)"));
    CHECK_THROWS_AS(log.declare("train", {{"step", with_nul, ""}}), UsageError);
    CHECK_THROWS_WITH(log.set_attribute("huge", std::string(70000, 'x')),
                      Catch::Contains("put_text"));
    log.set_attribute("status", "complete");
  }
  const auto attributes = runlog::read_attributes(path);
  CHECK(attributes.count("nul") == 0);
  CHECK(attributes.count("huge") == 0);
  CHECK(attributes.at("status") == "complete");
  CHECK(runlog::list_tables(path).empty());
}

TEST_CASE("RunLog strings: an older log with variable-length strings still reads and resumes") {
  const std::string path = slowpipe::test::scratch("strings_old") + "/old.h5";
  write_old_format_log(path);
  auto attributes = runlog::read_attributes(path);
  CHECK(attributes.at("config.model.name") == "gpt");
  CHECK(attributes.at("status") == "complete");
  CHECK(attributes.at("config.optim.lr") == "0.25");
  runlog::Table train = runlog::read_table(path, "train");
  REQUIRE(train.columns.size() == 1);
  CHECK(train.columns[0].unit == "1");
  CHECK(train.columns[0].description == "optimizer step");
  CHECK(train.column("step") == std::vector<double>{1, 2, 3});
  CHECK(runlog::read_text(path, "calibration") == "{\"model\": \"measured\"}");
  {
    auto log = RunLog::reopen(path, {{"train", 3}});
    log->set_attribute("status", "running");
    log->append("train", {{"step", 4}});
    log->put_text("trace_step_4", "[]");
  }
  attributes = runlog::read_attributes(path);
  CHECK(attributes.at("status") == "running");
  CHECK(attributes.at("config.model.name") == "gpt");
  CHECK(runlog::read_table(path, "train").column("step") == std::vector<double>{1, 2, 3, 4});
  CHECK(runlog::read_text(path, "trace_step_4") == "[]");
  CHECK(runlog::read_text(path, "calibration") == "{\"model\": \"measured\"}");
}

// Each section damages the first global heap object (config.model.name) the
// way fuzz_runlog_read found HDF5 1.10 crash (H5HG_read on a missing or
// oversized object) or hang (a free-space entry of size 0).
TEST_CASE("RunLog strings: a damaged global heap in an older log is a DataError") {
  const std::string dir = slowpipe::test::scratch("strings_old_damaged");
  const std::string intact = dir + "/intact.h5";
  write_old_format_log(intact);
  const std::string bytes = slurp(intact);
  const size_t heap = collection_at(bytes);
  const size_t first = heap + 16;  // the first object's header
  REQUIRE(bytes[first] == 1);      // object 1: "gpt"
  REQUIRE(bytes[first + 8] == 3);
  std::string damaged = bytes;
  std::string why;
  SECTION("the object the attribute names is missing") {
    put_le(damaged, first, 77, 2);
    why = "no object 1";
  }
  SECTION("a free-space entry of size 0 (HDF5 loops)") {
    put_le(damaged, first, 0, 2);
    put_le(damaged, first + 8, 0, 8);
    why = "free-space entry of size 0";
  }
  SECTION("the object is larger than the string it holds") {
    put_le(damaged, first + 8, 6, 8);
    why = "holds 6 bytes, the reference says 3";
  }
  SECTION("an object runs past its collection") {
    put_le(damaged, first + 8, 1u << 20, 8);
    why = "larger than its collection";
  }
  SECTION("the collection claims more bytes than the file has") {
    put_le(damaged, heap + 8, uint64_t{1} << 40, 8);
    why = "past the end of the file";
  }
  const std::string path = dir + "/damaged.h5";
  spill(path, damaged);
  CHECK_THROWS_WITH(runlog::read_attributes(path),
                    Catch::Contains("attribute 'config.model.name'") && Catch::Contains(why));
  // Control: the intact file reads.
  CHECK(runlog::read_attributes(intact).at("config.model.name") == "gpt");
}

// Not a test: writes the run-log seeds of fuzz/corpus/fuzz_runlog_read in the
// current format (fuzz/README.md): build/tests/sim/test_runlog "[.fuzz-seeds]".
TEST_CASE("fuzz seeds: the run-log seeds in the current format", "[.fuzz-seeds]") {
  const fs::path dir = fs::path(SLOWPIPE_SOURCE_DIR) / "fuzz" / "corpus" / "fuzz_runlog_read";
  fs::create_directories(dir);
  const auto seed = [&](const std::string& name, int rows, bool blob) {
    const std::string path = (dir / name).string();
    fs::remove(path);
    RunLog log(path, /*overwrite=*/false, /*flush_every=*/2);
    log.set_attribute("config.model.name", "gpt");
    log.set_attribute("status", "complete");
    log.set_attribute("sim_time_s", 1.5);
    for (const char* table : {"train", "eval"}) {
      log.declare(table, {{"step", "1", "optimizer step"}, {"loss", "nats", "mean loss"}});
      for (int s = 1; s <= rows; ++s) log.append(table, {{"step", s}, {"loss", 1.0 / s}});
    }
    if (blob) log.put_text("trace_step_1", "{\"traceEvents\": []}");
  };
  seed("fixed_small_log.h5", 5, true);
  seed("fixed_empty_tables.h5", 0, false);
  CHECK(variable_strings((dir / "fixed_small_log.h5").string()).empty());
}
