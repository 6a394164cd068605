// Damaged run logs: each file is written by RunLog, then broken with the HDF5
// API the way a bug, a foreign tool or a bad copy could break it. The readers
// behind `slowpipe export` must say exactly what is wrong (DataError, exit 3)
// instead of cutting rows or dropping columns without a word.
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/errors.h"
#include "runlog/export.h"
#include "runlog/runlog.h"

namespace fs = std::filesystem;
using slowpipe::DataError;
using slowpipe::UsageError;
using slowpipe::runlog::RunLog;

namespace {

// A closed run log with 10 rows of step and loss in "train" and 2 in "eval".
std::string healthy_log(const std::string& name, const std::string& status = "complete") {
  const fs::path dir = fs::path(SLOWPIPE_BINARY_DIR) / "test_runlog_tmp" / "damaged";
  fs::create_directories(dir);
  std::string path = (dir / (name + ".h5")).string();
  fs::remove(path);
  RunLog log(path, /*overwrite=*/false, /*flush_every=*/3);
  log.set_attribute("config.model.name", "gpt");
  if (!status.empty()) log.set_attribute("status", status);
  log.declare("train", {{"step", "1", ""}, {"loss", "nats", ""}});
  log.declare("eval", {{"step", "1", ""}, {"loss", "nats", ""}});
  for (int s = 0; s < 10; ++s) log.append("train", {{"step", s}, {"loss", 1.0 / (s + 1)}});
  for (int s = 0; s < 2; ++s) log.append("eval", {{"step", s}, {"loss", 2.0}});
  return path;
}

// Opens `path` read-write for breaking.
H5::H5File open_rw(const std::string& path) {
  return H5::H5File(path, H5F_ACC_RDWR);
}

void set_rows(const std::string& path, int64_t rows) {
  H5::H5File file = open_rw(path);
  file.openGroup("train").openAttribute("rows").write(H5::PredType::NATIVE_INT64, &rows);
}

// The DataError message of export_table (and that nothing reached stdout).
std::string export_error(const std::string& path, const std::string& table = "train") {
  std::ostringstream out, warnings;
  try {
    slowpipe::runlog::export_table(path, table, out, warnings);
  } catch (const DataError& e) {
    CHECK(out.str().empty());
    return e.what();
  }
  FAIL("no DataError; exported:\n" << out.str());
  return "";
}

}  // namespace

TEST_CASE("export: a damaged 'rows' attribute is a DataError naming it") {
  SECTION("beyond the data") {
    const std::string path = healthy_log("rows_beyond");
    set_rows(path, 50);
    const std::string msg = export_error(path);
    CHECK_THAT(msg, Catch::Contains(path) && Catch::Contains("column train/") &&
                        Catch::Contains(" holds 10 values") &&
                        Catch::Contains("'rows' attribute says 50"));
  }
  SECTION("negative") {
    const std::string path = healthy_log("rows_negative");
    set_rows(path, -3);
    CHECK_THAT(export_error(path), Catch::Contains("table 'train'") &&
                                       Catch::Contains("'rows' attribute is -3 (negative)"));
    CHECK_THROWS_AS(slowpipe::runlog::read_row_counts(path), DataError);
  }
  SECTION("larger than the file could hold") {
    const std::string path = healthy_log("rows_huge");
    set_rows(path, int64_t{1} << 40);
    CHECK_THAT(export_error(path), Catch::Contains("more than the whole file"));
  }
  SECTION("not an integer") {
    const std::string path = healthy_log("rows_string");
    {
      H5::H5File file = open_rw(path);
      H5::Group train = file.openGroup("train");
      train.removeAttr("rows");
      const H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
      train.createAttribute("rows", type, H5::DataSpace(H5S_SCALAR)).write(type, std::string("10"));
    }
    CHECK_THAT(export_error(path), Catch::Contains("'rows' attribute is string"));
  }
}

TEST_CASE("export: a broken column is a DataError naming it") {
  SECTION("shorter than the others") {
    const std::string path = healthy_log("short_column");
    {
      H5::H5File file = open_rw(path);
      const hsize_t dims[1] = {4};
      REQUIRE(H5Dset_extent(file.openDataSet("/train/loss").getId(), dims) >= 0);
    }
    CHECK_THAT(export_error(path),
               Catch::Contains("column train/loss holds 4 values") && Catch::Contains("says 10"));
  }
  SECTION("wrong type") {
    const std::string path = healthy_log("int_column");
    {
      H5::H5File file = open_rw(path);
      const hsize_t dims[1] = {10};
      file.openGroup("train").createDataSet("bytes", H5::PredType::STD_I32LE,
                                            H5::DataSpace(1, dims));
    }
    CHECK_THAT(export_error(path),
               Catch::Contains("column train/bytes holds integer values, expected float64"));
  }
  SECTION("wrong rank") {
    const std::string path = healthy_log("rank_column");
    {
      H5::H5File file = open_rw(path);
      const hsize_t dims[2] = {10, 2};
      file.openGroup("train").createDataSet("pairs", H5::PredType::IEEE_F64LE,
                                            H5::DataSpace(2, dims));
    }
    CHECK_THAT(export_error(path), Catch::Contains("column train/pairs has rank 2"));
  }
  SECTION("not stored as slowpipe stores columns (contiguous, float32)") {
    for (const bool single : {false, true}) {
      const std::string path = healthy_log(single ? "f32_column" : "contiguous_column");
      {
        H5::H5File file = open_rw(path);
        const hsize_t dims[1] = {10};
        file.openGroup("train").createDataSet(
            "odd", single ? H5::PredType::IEEE_F32LE : H5::PredType::IEEE_F64LE,
            H5::DataSpace(1, dims));
      }
      CHECK_THAT(export_error(path),
                 Catch::Contains("column train/odd is not stored as slowpipe writes its columns"));
    }
  }
  SECTION("a member that is not a column") {
    const std::string path = healthy_log("group_member");
    { open_rw(path).openGroup("train").createGroup("extra"); }
    CHECK_THAT(export_error(path), Catch::Contains("member 'extra' is a group, not a column"));
  }
}

TEST_CASE("export: missing or broken tables") {
  SECTION("a run log without its train table") {
    const std::string path = healthy_log("no_train");
    { open_rw(path).unlink("train"); }
    CHECK_THAT(export_error(path), Catch::Contains("has no 'train' table (tables: eval)"));
    // A name the user got wrong stays a usage error.
    std::ostringstream out, warnings;
    CHECK_THROWS_AS(slowpipe::runlog::export_table(path, "trian", out, warnings), UsageError);
  }
  SECTION("a table that is not a group") {
    const std::string path = healthy_log("table_dataset");
    {
      H5::H5File file = open_rw(path);
      file.unlink("eval");
      const hsize_t dims[1] = {3};
      file.createDataSet("eval", H5::PredType::IEEE_F64LE, H5::DataSpace(1, dims));
    }
    CHECK_THAT(export_error(path, "eval"), Catch::Contains("table 'eval' is not a group"));
  }
  SECTION("a table group without 'rows'") {
    const std::string path = healthy_log("table_no_rows");
    { open_rw(path).openGroup("eval").removeAttr("rows"); }
    CHECK_THAT(export_error(path, "eval"), Catch::Contains("table 'eval' has no 'rows' attribute"));
  }
}

namespace {

// Zeroes the object header of /train/loss: what a kill inside the flush that
// created the column can leave (or a damaged disk block).
void wreck_loss_header(const std::string& path) {
  haddr_t header = HADDR_UNDEF;
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(file >= 0);
    H5O_info_t info;
    REQUIRE(H5Oget_info_by_name2(file, "/train/loss", &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0);
    header = info.addr;
    H5Fclose(file);
  }
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(header));
  const std::string zeros(64, '\0');
  f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
}

}  // namespace

TEST_CASE("export: an unreadable column") {
  SECTION("in a finished run is damage") {
    const std::string path = healthy_log("wrecked_complete", "complete");
    wreck_loss_header(path);
    CHECK_THAT(export_error(path), Catch::Contains("column train/loss is unreadable") &&
                                       Catch::Contains("status is 'complete'"));
  }
  SECTION("in a run that did not finish is left out with a warning") {
    const std::string path = healthy_log("wrecked_running", "running");
    wreck_loss_header(path);
    std::ostringstream out, warnings;
    slowpipe::runlog::export_table(path, "train", out, warnings);
    CHECK(out.str().rfind("step\n0\n1\n", 0) == 0);
    CHECK_THAT(warnings.str(), Catch::Contains("column train/loss is unreadable and left out"));
    // A reopen for resume keeps the readable columns; the wrecked one cannot
    // be declared again (HDF5 cannot unlink an object it cannot read).
    {
      auto log = RunLog::reopen(path, {{"train", 10}});
      CHECK_THROWS_WITH(log->declare("train", {{"loss", "nats", ""}}),
                        Catch::Contains("train/loss is unreadable"));
      log->declare("train", {{"step", "1", ""}});
      log->append("train", {{"step", 10}});
    }
    const auto table = slowpipe::runlog::read_table(path, "train");
    CHECK(table.skipped == std::vector<std::string>{"loss"});
    CHECK(table.column("step").size() == 11);
  }
}

TEST_CASE("slowpipe export exits 3 on a damaged log and 2 on a wrong table name") {
  const std::string path = healthy_log("cli_damaged");
  set_rows(path, -1);
  const std::string log = path + ".out";
  const std::string tool = SLOWPIPE_RUNLOG_TOOL;
  int status = std::system((tool + " export " + path + " --table train >" + log + " 2>&1").c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("data error") && Catch::Contains("(negative)"));
  status = std::system((tool + " export " + path + " --table nope >" + log + " 2>&1").c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  status = std::system((tool + " export " + path + " extra.h5 >" + log + " 2>&1").c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
}

// Regressions from fuzz/fuzz_runlog_read.cpp: strings HDF5's C++ wrappers read
// unsafely (a null variable-length string crashed in strlen; a string or number
// attribute holding several values overran the one-value buffer).
TEST_CASE("readers: null strings and multi-valued attributes from a damaged file") {
  const std::string path = healthy_log("odd_strings", "");
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(file >= 0);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const char* null_text = nullptr;
    const hid_t status = H5Acreate2(file, "status", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Awrite(status, type, &null_text) >= 0);
    H5Aclose(status);
    const hid_t blobs = H5Gcreate2(file, "blobs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t blob =
        H5Dcreate2(blobs, "trace_step_1", type, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Dwrite(blob, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &null_text) >= 0);
    H5Dclose(blob);
    H5Gclose(blobs);
    H5Sclose(scalar);
    H5Tclose(type);
    H5Fclose(file);
  }
  CHECK(slowpipe::runlog::read_attributes(path).at("status").empty());
  CHECK(slowpipe::runlog::read_text(path, "trace_step_1").empty());
  {
    H5::H5File file = open_rw(path);
    const hsize_t three[1] = {3};
    const H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    const char* units[3] = {"a", "b", "c"};
    H5::DataSet loss = file.openDataSet("/train/loss");
    loss.removeAttr("unit");
    loss.createAttribute("unit", type, H5::DataSpace(1, three)).write(type, units);
    const double xs[3] = {1, 2, 3};
    file.createAttribute("sim_time_s", H5::PredType::IEEE_F64LE, H5::DataSpace(1, three))
        .write(H5::PredType::NATIVE_DOUBLE, xs);
  }
  CHECK_THAT(export_error(path),
             Catch::Contains("train/loss: attribute 'unit' holds 3 values, expected one string"));
  CHECK_THROWS_WITH(slowpipe::runlog::read_attributes(path),
                    Catch::Contains("attribute 'sim_time_s' holds 3 values, expected one"));
}

// The argument checks every command shares (cli/config_args.h), through the
// real binary: nothing given on the command line is ignored.
TEST_CASE("slowpipe commands refuse stray arguments and explicitly empty values") {
  const std::string tool = SLOWPIPE_RUNLOG_TOOL;
  const fs::path dir = fs::path(SLOWPIPE_BINARY_DIR) / "test_runlog_tmp" / "cli_args";
  fs::create_directories(dir);
  const std::string log = (dir / "out.txt").string();
  const std::pair<const char*, const char*> cases[] = {
      {"train foo", "unexpected argument 'foo'"},
      {"train --steps 3 -- bar", "unexpected argument 'bar'"},
      {"train --fw ''", "empty value for --fw"},
      {"train --config ''", "empty value for --config"},
      {"timing --bandwidth ''", "empty value for --bandwidth"},
      {"timing q4", "unexpected argument 'q4'"},
      {"codec --spec q4 extra", "unexpected argument 'extra'"},
      {"netsim a.json b.json", "unexpected argument 'b.json'"},
      {"export a.h5 b.h5", "unexpected argument 'b.h5'"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    const int status = std::system((tool + " " + args + " >" + log + " 2>&1").c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Catch::Contains(message));
  }
}

// Regression from fuzz_runlog_read: HDF5 1.10 decodes every attribute message
// of an object as soon as one attribute is looked up, and copies the value
// (elements x type size) without checking that the message holds it, reading
// past the object header. The readers check the messages first.
TEST_CASE("readers: an attribute message claiming more bytes than it holds is a DataError") {
  SECTION("the input the fuzzer found") {
    const std::string path =
        SLOWPIPE_SOURCE_DIR "/fuzz/corpus/fuzz_runlog_read/regression-attribute-overflow";
    CHECK_THROWS_WITH(
        slowpipe::runlog::read_attributes(path),
        Catch::Contains("damaged object header") && Catch::Contains("attribute message"));
  }
  SECTION("a string attribute whose stored size was raised") {
    const std::string path = healthy_log("attribute_size");
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const size_t name = bytes.find(std::string("status\0\0", 8));
    REQUIRE(name != std::string::npos);
    const size_t type = name + 8;        // the name "status" + NUL, padded to 8
    REQUIRE((bytes[type] & 0x0F) == 3);  // a string ...
    REQUIRE(bytes[type + 4] == 9);       // ... of "complete" + NUL
    CHECK(slowpipe::runlog::read_attributes(path).at("status") == "complete");  // control
    bytes[type + 5] = 0x10;                                                  // 9 + 4096 bytes
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    CHECK_THROWS_WITH(slowpipe::runlog::read_attributes(path),
                      Catch::Contains("attribute 'status' claims 1 x 4105 bytes"));
    CHECK_THAT(export_error(path), Catch::Contains("claims 1 x 4105 bytes"));
  }
}

// Regression from fuzz_runlog_read: HDF5 1.10 divides by each chunk dimension
// when it opens a chunked dataset, so a layout message with a chunk size of 0
// was a SIGFPE inside H5Dopen. The readers check the layout's bytes first; such
// a column is unreadable (a DataError in a finished run).
TEST_CASE("readers: a column whose chunk size is 0 is unreadable, not a crash") {
  const std::string path = healthy_log("chunk_zero");
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // Layout message version 3, chunked, 2 dimensions (rows, element), the
  // B-tree address, then the chunk: 1024 rows of 8 bytes.
  const std::string chunk("\x00\x04\x00\x00\x08\x00\x00\x00", 8);
  int patched = 0;
  for (size_t at = bytes.find(chunk); at != std::string::npos; at = bytes.find(chunk, at + 1)) {
    if (at < 11 || bytes.compare(at - 11, 3, "\x03\x02\x02") != 0) continue;
    bytes[at + 1] = 0;  // 1024 -> 0 rows per chunk
    ++patched;
  }
  REQUIRE(patched == 4);  // step and loss of train and eval
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  CHECK_THAT(export_error(path),
             Catch::Contains("column train/") && Catch::Contains("is unreadable"));
  CHECK_THROWS_AS(slowpipe::runlog::read_table(path, "eval"), DataError);
}
