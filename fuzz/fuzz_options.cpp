// Fuzz target: the configuration parser. The input is read as the text of an
// INI file (OptionSet::load_ini_text, the second half of `--config FILE`) and,
// line by line, as `--set KEY=VALUE` assignments, against an OptionSet with a
// key of every kind (int, int64, float, bool, string, non-empty string, path,
// choice, custom). Only UsageError may escape the parser; anything else (a
// crash, another exception) is a bug. After each accepted input every key's
// printed value must parse back to itself (what the run log records is what a
// rerun reads).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "common/options.h"

namespace {

struct Config {
  int steps = 10;
  int64_t limit = 0;
  double lr = 3e-4;
  double fraction = 0.5;
  bool flag = false;
  std::string label;
  std::string out = "run.h5";
  std::string data_path;
  std::string init_from;
  std::string schedule = "1f1b";
  std::vector<int64_t> cuts;
};

void describe(Config& c, slowpipe::OptionSet& o) {
  o.add("run.steps", c.steps, "steps", 0, 1000000);
  o.add("data.limit", c.limit, "limit", 0, INT64_MAX);
  o.add("optim.lr", c.lr, "lr", 0.0, 10.0);
  o.add("data.fraction", c.fraction, "fraction", 0.0, 1.0);
  o.add("run.flag", c.flag, "flag");
  o.add("run.label", c.label, "label");
  o.add_nonempty("run.out", c.out, "output");
  o.add_path("data.path", c.data_path, "input file");
  o.add_path("model.init_from", c.init_from, "checkpoint");
  o.add_choice("pipeline.schedule", c.schedule, {"gpipe", "1f1b"}, "schedule");
  o.add_custom(
      "pipeline.cuts", "int list", "cuts",
      [&c](const std::string& v) { c.cuts = slowpipe::parse_int_list("pipeline.cuts", v); },
      [&c] {
        std::string s;
        for (int64_t x : c.cuts) s += (s.empty() ? "" : ",") + std::to_string(x);
        return s;
      });
}

// Every key's printed value sets it to the same printed value.
void check_round_trip(slowpipe::OptionSet& o) {
  for (const auto& [key, value] : o.resolved()) {
    try {
      o.set(key, value);
    } catch (const slowpipe::UsageError& e) {
      std::fprintf(stderr, "round trip: %s = '%s' does not parse back: %s\n", key.c_str(),
                   value.c_str(), e.what());
      std::abort();
    }
    if (o.get(key) != value) {
      std::fprintf(stderr, "round trip: %s = '%s' reads back as '%s'\n", key.c_str(), value.c_str(),
                   o.get(key).c_str());
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  {
    Config c;
    slowpipe::OptionSet o;
    describe(c, o);
    try {
      o.load_ini_text(text, "fuzz.ini", "/presets");
      check_round_trip(o);
    } catch (const slowpipe::UsageError&) {
    }
  }
  {
    Config c;
    slowpipe::OptionSet o;
    describe(c, o);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      try {
        o.set_assignment(line);
      } catch (const slowpipe::UsageError&) {
      }
    }
    check_round_trip(o);
  }
  return 0;
}
