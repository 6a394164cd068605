// Run log round trips: attributes, tables (late columns, NaN fill, many rows
// over several flushes and chunks), blobs, TSV, labels, and the errors a user
// meets (overwrite, missing or garbage files, unknown tables and columns).
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/errors.h"
#include "runlog/export.h"
#include "runlog/runlog.h"
#include "runlog_scratch.h"

namespace fs = std::filesystem;
using slowpipe::DataError;
using slowpipe::UsageError;
using slowpipe::runlog::ColumnInfo;
using slowpipe::runlog::RunLog;

namespace {

using slowpipe::test::scratch;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Dataset extent on disk, through the plain C API (what h5dump/h5py see).
hsize_t extent_of(const std::string& path, const std::string& dataset) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  const hid_t ds = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  REQUIRE(ds >= 0);
  const hid_t space = H5Dget_space(ds);
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(file);
  return dims[0];
}

double loss_at(int64_t step) {
  return 2.5 * std::exp(-0.001 * static_cast<double>(step)) + 0.1;
}

}  // namespace

TEST_CASE("RunLog: attributes round trip") {
  const std::string path = scratch("attrs") + "/run.h5";
  {
    RunLog log(path, /*overwrite=*/false);
    log.set_attribute("config.optim.lr", "0.0003");
    log.set_attribute("config.model.name", "gpt");
    log.set_attribute("start_time", "2026-11-22T07:41:20Z");
    log.set_attribute("host", "h\xc3\xa9te");  // UTF-8 survives
    log.set_attribute("seed", 1234.0);
    log.set_attribute("scale", 0.1);
    log.set_attribute("config.model.name", "cnn");  // a second set replaces
  }
  const auto attrs = slowpipe::runlog::read_attributes(path);
  CHECK(attrs.size() == 6);
  CHECK(attrs.at("config.optim.lr") == "0.0003");
  CHECK(attrs.at("config.model.name") == "cnn");
  CHECK(attrs.at("start_time") == "2026-11-22T07:41:20Z");
  CHECK(attrs.at("host") == "h\xc3\xa9te");
  CHECK(attrs.at("seed") == "1234");
  CHECK(std::stod(attrs.at("scale")) == 0.1);  // shortest round-trip text
}

TEST_CASE("RunLog: tables round trip with a late column and several flushes") {
  const std::string path = scratch("tables") + "/deep/er/run.h5";  // parents are created
  constexpr int64_t kRows = 2500;                                  // spans three chunks
  constexpr int64_t kLateFrom = 1100;
  {
    RunLog log(path, /*overwrite=*/false, /*flush_every=*/7);
    log.declare("train", {{"step", "1", "optimizer step"}, {"loss", "nats", "training loss"}});
    log.declare("eval", {{"step", "1", "optimizer step"}, {"accuracy", "1", "top-1"}});
    log.declare("train", {{"step", "1", "again"}});  // idempotent
    for (int64_t s = 0; s < kRows; ++s) {
      if (s == kLateFrom) log.declare("train", {{"fw0_bytes", "bytes", "bytes on boundary 0"}});
      std::map<std::string, double> row = {{"step", double(s)}, {"loss", loss_at(s)}};
      if (s >= kLateFrom) row["fw0_bytes"] = double(1000 + s);
      if (s % 3 == 0) row.erase("loss");  // a missing value becomes NaN
      log.append("train", row);
      if (s % 500 == 0) log.append("eval", {{"step", double(s)}, {"accuracy", s / 5000.0}});
      CHECK(log.rows("train") == s + 1);
      // A flush comes every 7 appends to the log, whatever the table.
      CHECK(log.flushed_rows("train") <= log.rows("train"));
      CHECK(log.rows("train") - log.flushed_rows("train") < 7);
    }
  }
  CHECK(slowpipe::runlog::list_tables(path) == std::vector<std::string>{"eval", "train"});
  const auto train = slowpipe::runlog::read_table(path, "train");
  REQUIRE(train.rows() == size_t(kRows));
  REQUIRE(train.columns.size() == 3);
  CHECK(train.columns[0].name == "step");  // declaration order, not name order
  CHECK(train.columns[1].name == "loss");
  CHECK(train.columns[1].unit == "nats");
  CHECK(train.columns[1].description == "training loss");
  CHECK(train.columns[2].name == "fw0_bytes");
  CHECK(train.columns[2].unit == "bytes");
  const auto& step = train.column("step");
  const auto& loss = train.column("loss");
  const auto& bytes = train.column("fw0_bytes");
  for (int64_t s = 0; s < kRows; ++s) {
    INFO("row " << s);
    REQUIRE(step[s] == double(s));
    if (s % 3 == 0) {
      REQUIRE(std::isnan(loss[s]));
    } else {
      REQUIRE(loss[s] == loss_at(s));  // bitwise: float64 all the way
    }
    if (s < kLateFrom) {
      REQUIRE(std::isnan(bytes[s]));
    } else {
      REQUIRE(bytes[s] == double(1000 + s));
    }
  }
  const auto eval = slowpipe::runlog::read_table(path, "eval");
  REQUIRE(eval.rows() == 5);
  CHECK(eval.column("step") == std::vector<double>{0, 500, 1000, 1500, 2000});
  CHECK(eval.column("accuracy")[4] == 2000 / 5000.0);
  // A clean close trims the chunk padding: plain HDF5 readers see exact extents.
  CHECK(extent_of(path, "/train/loss") == hsize_t(kRows));
  CHECK(extent_of(path, "/train/fw0_bytes") == hsize_t(kRows));
  CHECK(extent_of(path, "/eval/step") == 5);
  CHECK_THROWS_WITH(train.column("nope"), Catch::Contains("no column 'nope'") &&
                                              Catch::Contains("step, loss, fw0_bytes"));
}

TEST_CASE("RunLog: buffered rows reach the file only on flush") {
  const std::string path = scratch("buffer") + "/run.h5";
  RunLog log(path, false, /*flush_every=*/4);
  log.declare("train", {{"step", "1", ""}});
  for (int s = 0; s < 6; ++s) log.append("train", {{"step", double(s)}});
  // The file is readable while the writer is alive and shows flushed rows only.
  CHECK(slowpipe::runlog::read_table(path, "train").rows() == 4);
  log.flush();
  CHECK(slowpipe::runlog::read_table(path, "train").column("step") ==
        std::vector<double>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("RunLog: blobs") {
  const std::string path = scratch("blobs") + "/run.h5";
  std::string big(200000, 'x');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = char('a' + i % 26);
  {
    RunLog log(path, false);
    log.declare("train", {{"step", "1", ""}});
    log.put_text("trace_step_10", "{\"ops\": [1, 2]}");
    log.put_text("trace_step_10", "{\"ops\": [3]}");  // replaces
    log.put_text("big", big);
    CHECK_THROWS_AS(log.put_text("a/b", "x"), UsageError);
  }
  CHECK(slowpipe::runlog::list_blobs(path) == std::vector<std::string>{"big", "trace_step_10"});
  CHECK(slowpipe::runlog::read_text(path, "trace_step_10") == "{\"ops\": [3]}");
  CHECK(slowpipe::runlog::read_text(path, "big") == big);
  CHECK(slowpipe::runlog::list_tables(path) == std::vector<std::string>{"train"});
  CHECK_THROWS_WITH(slowpipe::runlog::read_text(path, "nope"),
                    Catch::Contains("no blob 'nope'") && Catch::Contains("big, trace_step_10"));
}

TEST_CASE("RunLog: refuses to overwrite unless asked") {
  const std::string path = scratch("overwrite") + "/run.h5";
  {
    RunLog log(path, false);
    log.set_attribute("first", "yes");
  }
  CHECK_THROWS_AS(RunLog(path, false), UsageError);
  CHECK_THROWS_WITH(RunLog(path, false), Catch::Contains(path) && Catch::Contains("exists"));
  CHECK(slowpipe::runlog::read_attributes(path).at("first") == "yes");  // untouched
  {
    RunLog log(path, /*overwrite=*/true);
    log.set_attribute("second", "yes");
  }
  const auto attrs = slowpipe::runlog::read_attributes(path);
  CHECK(attrs.count("first") == 0);
  CHECK(attrs.at("second") == "yes");
}

TEST_CASE("RunLog: writer usage errors") {
  const std::string path = scratch("usage") + "/run.h5";
  RunLog log(path, false);
  log.declare("train", {{"step", "1", ""}});
  CHECK_THROWS_WITH(log.append("evil", {{"step", 1}}), Catch::Contains("table 'evil'"));
  CHECK_THROWS_WITH(log.append("train", {{"loss", 1}}), Catch::Contains("column 'loss'"));
  CHECK_THROWS_AS(log.declare("blobs", {{"x", "1", ""}}), UsageError);
  CHECK_THROWS_AS(log.declare("a/b", {{"x", "1", ""}}), UsageError);
  CHECK_THROWS_AS(log.declare("train", {{"bad name", "1", ""}}), UsageError);
  CHECK_THROWS_WITH(log.declare("train", {{"step", "s", ""}}), Catch::Contains("unit"));
  CHECK(log.rows("train") == 0);  // failed appends left no partial row
  CHECK_THROWS_AS(RunLog(scratch("usage") + "/x.h5", false, /*flush_every=*/0), UsageError);
}

TEST_CASE("read_table: clear errors for missing, garbage and unknown") {
  const std::string dir = scratch("errors");
  SECTION("missing file") {
    CHECK_THROWS_AS(slowpipe::runlog::read_table(dir + "/nope.h5", "train"), UsageError);
    CHECK_THROWS_WITH(slowpipe::runlog::read_attributes(dir + "/nope.h5"),
                      Catch::Contains(dir + "/nope.h5") && Catch::Contains("no such file"));
  }
  SECTION("garbage file") {
    std::ofstream(dir + "/garbage.h5") << "this is not HDF5\n";
    CHECK_THROWS_AS(slowpipe::runlog::list_tables(dir + "/garbage.h5"), UsageError);
    CHECK_THROWS_WITH(slowpipe::runlog::read_table(dir + "/garbage.h5", "train"),
                      Catch::Contains("garbage.h5") && Catch::Contains("not an HDF5 file"));
  }
  SECTION("empty file") {
    std::ofstream(dir + "/empty.h5").close();
    CHECK_THROWS_AS(slowpipe::runlog::read_attributes(dir + "/empty.h5"), UsageError);
  }
  SECTION("truncated HDF5 file") {
    {
      RunLog log(dir + "/whole.h5", false);
      log.declare("train", {{"step", "1", ""}});
      for (int s = 0; s < 100; ++s) log.append("train", {{"step", double(s)}});
    }
    fs::copy_file(dir + "/whole.h5", dir + "/cut.h5");
    fs::resize_file(dir + "/cut.h5", 1200);  // keeps the signature, loses the rest
    CHECK_THROWS_AS(slowpipe::runlog::read_table(dir + "/cut.h5", "train"), DataError);
    CHECK_THROWS_WITH(slowpipe::runlog::read_table(dir + "/cut.h5", "train"),
                      Catch::Contains("cut.h5"));
  }
  SECTION("unknown table names the tables that exist") {
    {
      RunLog log(dir + "/run.h5", false);
      log.declare("train", {{"step", "1", ""}});
      log.declare("eval", {{"step", "1", ""}});
      log.put_text("note", "blobs are not tables");
    }
    CHECK_THROWS_AS(slowpipe::runlog::read_table(dir + "/run.h5", "blobs"), UsageError);
    CHECK_THROWS_WITH(slowpipe::runlog::read_table(dir + "/run.h5", "evel"),
                      Catch::Contains("no table 'evel'") && Catch::Contains("eval, train"));
  }
}

TEST_CASE("write_tsv: header, integers, NaN and round-trip decimals") {
  slowpipe::runlog::Table table;
  table.columns = {{"step", "1", ""}, {"loss", "nats", ""}, {"bytes", "bytes", ""}};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  table.values = {{0, 1, -2, 1e12}, {0.1, 2.5, nan, 1.0 / 3.0}, {1e-5, inf, -inf, 4294967296.0}};
  std::ostringstream out;
  slowpipe::runlog::write_tsv(table, out);
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "step\tloss\tbytes");
  CHECK(lines[1] == "0\t0.1\t1e-05");
  CHECK(lines[2] == "1\t2.5\tinf");
  CHECK(lines[3] == "-2\tnan\t-inf");
  CHECK(lines[4].substr(0, 14) == "1000000000000\t");
  CHECK(lines[4].substr(lines[4].rfind('\t') + 1) == "4294967296");
  // Decimals parse back to the same double.
  const std::string third = lines[4].substr(14, lines[4].rfind('\t') - 14);
  CHECK(std::stod(third) == 1.0 / 3.0);
}

TEST_CASE("export_table and run_label") {
  const std::string dir = scratch("export");
  {
    RunLog log(dir + "/a.h5", false, 2);
    log.set_attribute("config.model.name", "gpt");
    log.set_attribute("config.compress.fw", "aq(q2)");
    log.set_attribute("config.compress.bw", "q8");
    log.set_attribute("config.net.preset", "wan-500mbps");
    log.set_attribute("config.run.label", "");
    log.declare("train", {{"step", "1", ""}, {"loss", "nats", ""}});
    log.append("train", {{"step", 1}, {"loss", 0.5}});
    log.append("train", {{"step", 2}});
  }
  std::ostringstream out;
  std::ostringstream warnings;
  slowpipe::runlog::export_table(dir + "/a.h5", "train", out, warnings);
  CHECK(warnings.str().empty());
  CHECK(out.str() == "step\tloss\n1\t0.5\n2\tnan\n");
  CHECK(slowpipe::runlog::run_label(dir + "/a.h5") == "gpt fw=aq(q2) bw=q8 net=wan-500mbps");
  {
    RunLog log(dir + "/b.h5", false);
    log.set_attribute("config.model.name", "cnn");
    log.set_attribute("config.net.preset", "lan");
  }
  CHECK(slowpipe::runlog::run_label(dir + "/b.h5") == "cnn net=lan");
  {
    RunLog log(dir + "/c.h5", false);
    log.set_attribute("config.model.name", "cnn");
    log.set_attribute("config.run.label", "baseline fp32");
  }
  CHECK(slowpipe::runlog::run_label(dir + "/c.h5") == "baseline fp32");
  { RunLog log(dir + "/bare-run.h5", false); }
  CHECK(slowpipe::runlog::run_label(dir + "/bare-run.h5") == "bare-run");
  // A log with config.* attributes is a slowpipe run log: it must have an eval table.
  CHECK_THROWS_AS(slowpipe::runlog::export_table(dir + "/a.h5", "eval", out, warnings), DataError);
  CHECK_THROWS_AS(slowpipe::runlog::export_table(dir + "/a.h5", "evl", out, warnings), UsageError);
}

TEST_CASE("read_table: a column with a wrecked header is skipped, not fatal") {
  // What a kill inside the flush that creates a column can leave: the link is
  // on disk, the column's object header is not. Simulated by zeroing the header.
  const std::string path = scratch("wrecked") + "/run.h5";
  {
    RunLog log(path, false, 4);
    log.declare("train", {{"step", "1", ""}, {"loss", "nats", ""}});
    for (int s = 0; s < 8; ++s) log.append("train", {{"step", s}, {"loss", loss_at(s)}});
    log.declare("train", {{"fw0_bytes", "bytes", ""}});
  }
  haddr_t header = HADDR_UNDEF;
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(file >= 0);
    H5O_info_t info;
    REQUIRE(H5Oget_info_by_name2(file, "/train/fw0_bytes", &info, H5O_INFO_BASIC, H5P_DEFAULT) >=
            0);
    header = info.addr;
    H5Fclose(file);
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(header));
    const std::string zeros(64, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  const auto table = slowpipe::runlog::read_table(path, "train");
  CHECK(table.skipped == std::vector<std::string>{"fw0_bytes"});
  REQUIRE(table.columns.size() == 2);
  CHECK(table.column("step") == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(table.column("loss")[7] == loss_at(7));
}
