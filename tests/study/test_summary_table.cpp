// The summary table's row order (config values with units sorted by their
// value, the rest by text) and the default text form fitted to 100 columns,
// on small run logs written here with runlog::RunLog.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "runlog/runlog.h"
#include "study/summary/summary_inputs.h"
#include "study/summary/summary_table.h"
#include "tests/runlog/runlog_scratch.h"

namespace sp = slowpipe;
namespace st = slowpipe::study;

namespace {

// Sorts a copy of `values` with config_value_less.
std::vector<std::string> sorted(std::vector<std::string> values) {
  std::stable_sort(values.begin(), values.end(), st::config_value_less);
  return values;
}

// A 10-step log with a long-valued key, so the full table is wide.
void write_log(const std::string& path, const std::string& preset, const std::string& fw,
               const std::string& status) {
  sp::runlog::RunLog log(path, /*overwrite=*/true);
  const std::map<std::string, std::string> config = {
      {"model.name", "mlp"},  {"model.layers", "2"}, {"model.hidden", "10"},
      {"net.preset", preset}, {"compress.fw", fw},   {"pipeline.batch_size", "4"},
      {"run.seed", "1"},      {"run.out", path},     {"pipeline.replicas", "1"}};
  for (const auto& [k, v] : config) log.set_attribute("config." + k, v);
  log.set_attribute("pipeline.resolved_cuts", "0,1,3");
  log.set_attribute("status", status);
  log.declare("train", {{"step", "1", ""},
                        {"loss", "1", ""},
                        {"sim_time_s", "s", ""},
                        {"fw0_bytes", "bytes", ""},
                        {"bw0_bytes", "bytes", ""},
                        {"channel_state_bytes", "bytes", ""}});
  for (int i = 1; i <= 10; ++i) {
    log.append("train", {{"step", i},
                         {"loss", 3 - 0.1 * i},
                         {"sim_time_s", 0.5 * i},
                         {"fw0_bytes", 40},
                         {"bw0_bytes", 80},
                         {"channel_state_bytes", 64}});
  }
  log.declare("eval", {{"step", "1", ""},
                       {"loss", "1", ""},
                       {"accuracy", "1", ""},
                       {"loss_compressed", "1", ""},
                       {"accuracy_compressed", "1", ""}});
  log.append("eval", {{"step", 10},
                      {"loss", 1.5},
                      {"accuracy", 0.5},
                      {"loss_compressed", 1.6},
                      {"accuracy_compressed", 0.4}});
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t columns(const std::string& line) {  // UTF-8 code points
  return static_cast<size_t>(
      std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

TEST_CASE("summary: config values sort by their value, units understood") {
  // Bandwidths: text order would be 100Mbps, 10Gbps, 1Gbps.
  CHECK(sorted({"100Mbps", "10Gbps", "1Gbps", "500Kbps"}) ==
        std::vector<std::string>{"500Kbps", "100Mbps", "1Gbps", "10Gbps"});
  CHECK(sorted({"1Gbit/s", "100MB/s"}) == std::vector<std::string>{"100MB/s", "1Gbit/s"});
  // Byte sizes, binary and decimal prefixes.
  CHECK(sorted({"1MiB", "64KiB", "1MB", "2KB"}) ==
        std::vector<std::string>{"2KB", "64KiB", "1MB", "1MiB"});
  // Durations.
  CHECK(sorted({"1s", "2ms", "500us", "1min"}) ==
        std::vector<std::string>{"500us", "2ms", "1s", "1min"});
  // Plain numbers, as numbers (text order would put 10 before 9 and 1e-3 after 0.01).
  CHECK(sorted({"10", "9", "0.01", "1e-3", "-2"}) ==
        std::vector<std::string>{"-2", "1e-3", "0.01", "9", "10"});
  // Numbers first, then each unit family, then everything else by its text.
  CHECK(sorted({"q4", "1Gbps", "preset", "3", "aq(q2)", "2ms", "1KiB"}) ==
        std::vector<std::string>{"3", "1Gbps", "2ms", "1KiB", "aq(q2)", "preset", "q4"});
  // Equal values in different spellings keep a fixed (text) order; stable for equal text.
  CHECK(sorted({"1000Mbps", "1Gbps"}) == std::vector<std::string>{"1000Mbps", "1Gbps"});
  CHECK(sorted({"1Gbps", "1000Mbps"}) == std::vector<std::string>{"1000Mbps", "1Gbps"});
  CHECK_FALSE(st::config_value_less("q4", "q4"));
  CHECK(st::config_value_less("", "a"));  // the empty value is text
}

TEST_CASE("summary: rows in value order, the text form fitted to 100 columns") {
  const std::string dir = sp::test::scratch("summary_fit");
  const std::string fw = "ef(topk:0.1+q8:stochastic:group=64)";
  write_log(dir + "/a.h5", "10Gbps", fw, "complete");
  write_log(dir + "/b.h5", "1Gbps", fw, "complete");
  write_log(dir + "/c.h5", "100Mbps", fw, "complete");
  write_log(dir + "/d.h5", "100Mbps", "q4", "complete");
  const auto runs = st::read_runs(st::expand_run_paths({dir}), {});
  const st::SummaryTable table = st::build_summary_table(runs, true, {});
  std::ostringstream tsv, wide, text;
  st::write_summary(table, st::SummaryFormat::kTsv, tsv);
  st::write_summary(table, st::SummaryFormat::kTextWide, wide);
  st::write_summary(table, st::SummaryFormat::kText, text);
  // By compress.fw (text), then net.preset by bandwidth; file order was 10G, 1G, 100M.
  const auto rows = lines_of(tsv.str());
  REQUIRE(rows.size() == 5);
  CHECK(rows[1].rfind(fw + "\t100Mbps\t", 0) == 0);
  CHECK(rows[2].rfind(fw + "\t1Gbps\t", 0) == 0);
  CHECK(rows[3].rfind(fw + "\t10Gbps\t", 0) == 0);
  CHECK(rows[4].rfind("q4\t100Mbps\t", 0) == 0);

  const auto full = lines_of(wide.str());
  CHECK(columns(full[0]) > st::kTextWidth);  // the control: the full table does not fit
  CHECK(full[0].rfind("compress.fw", 0) == 0);
  const auto fitted = lines_of(text.str());
  for (const auto& line : fitted) CHECK(columns(line) <= st::kTextWidth);
  // Short key names; status left out (all complete) and said so; train loss kept.
  CHECK(fitted[0].rfind("fw ", 0) == 0);
  CHECK(fitted[0].find("net") != std::string::npos);
  CHECK(fitted[0].find("status") == std::string::npos);
  CHECK(fitted[0].find("train loss") != std::string::npos);
  CHECK(fitted[0].find("vs fp32") != std::string::npos);
  CHECK(text.str().find("status: every run is complete.") != std::string::npos);
  CHECK(text.str().find("--wide") != std::string::npos);
  // Every column the fitted table left out is named in its note.
  CHECK(text.str().find("left out to fit 100 columns:") != std::string::npos);
  CHECK(text.str().find("best acc (c)") != std::string::npos);
  CHECK(fitted[0].find("best acc (c)") == std::string::npos);
}

TEST_CASE("summary: the fitted text keeps a status that is not all complete") {
  const std::string dir = sp::test::scratch("summary_fit_status");
  write_log(dir + "/a.h5", "1Gbps", "q4", "complete");
  write_log(dir + "/b.h5", "1Gbps", "q2", "diverged");
  const auto runs = st::read_runs(st::expand_run_paths({dir}), {});
  std::ostringstream text;
  st::write_summary(st::build_summary_table(runs, true, {}), st::SummaryFormat::kText, text);
  const auto lines = lines_of(text.str());
  CHECK(lines[0].find("status") != std::string::npos);
  CHECK(lines[1].find("diverged") != std::string::npos);  // q2 sorts first
  CHECK(text.str().find("every run is complete") == std::string::npos);
}

TEST_CASE("summary: the fitted text leaves out the run column when the keys tell rows apart") {
  const std::string dir = sp::test::scratch("summary_fit_runs");
  write_log(dir + "/a_long_log_name_of_q4.h5", "1Gbps", "q4", "complete");
  write_log(dir + "/b_long_log_name_of_q2.h5", "1Gbps", "q2", "complete");
  auto text = [&] {
    const auto runs = st::read_runs(st::expand_run_paths({dir}), {});
    std::ostringstream out;
    st::write_summary(st::build_summary_table(runs, /*group_seeds=*/false, {}),
                      st::SummaryFormat::kText, out);
    return out.str();
  };
  const std::string apart = text();
  CHECK(lines_of(apart)[0].find("run") == std::string::npos);
  CHECK(apart.find("long_log_name") == std::string::npos);
  CHECK(apart.find("run: the log of each row, left out") != std::string::npos);
  // The control: a third log with q2's config cannot be told apart by its keys.
  write_log(dir + "/c_long_log_name_of_q2.h5", "1Gbps", "q2", "complete");
  const std::string same = text();
  CHECK(lines_of(same)[0].find("run") != std::string::npos);
  CHECK(same.find("c_long_log_name_of_q2") != std::string::npos);
}
