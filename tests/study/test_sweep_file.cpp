// Sweep file grammar: what parses, what is refused (and that the message names
// the problem), and the points the cross product, zip, exclude and only give.
#include <catch2/catch.hpp>
#include <string>

#include "common/errors.h"
#include "study/sweeps/sweep_file.h"

namespace {

using slowpipe::UsageError;
using slowpipe::study::expand_points;
using slowpipe::study::parse_sweep_text;
using slowpipe::study::SweepFile;

SweepFile parse(const std::string& text) {
  return parse_sweep_text(text, "/tmp/s/grid.ini", "/tmp/s");
}

size_t count(const std::string& text) {
  return expand_points(parse(text)).size();
}

// The message of the UsageError `text` raises (parsing and expanding).
std::string error_of(const std::string& text) {
  try {
    expand_points(parse(text));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("Sweep file: lists, base text, names and includes") {
  const SweepFile s = parse(
      "[run]\nsteps = 10\n[sweep]\ncompress.fw = none | q4:group=64 | aq(topk:0.1+q8)\n"
      "run.seed = 1|2  # seeds\nconfig = base.ini | ../other.ini\n[eval]\nevery = 5\n");
  REQUIRE(s.keys.size() == 2);
  CHECK(s.keys[0].key == "compress.fw");
  CHECK(s.keys[0].values == std::vector<std::string>{"none", "q4:group=64", "aq(topk:0.1+q8)"});
  CHECK(s.keys[0].line == 4);
  CHECK(s.keys[1].values == std::vector<std::string>{"1", "2"});
  CHECK(s.configs == std::vector<std::string>{"/tmp/s/base.ini", "/tmp/other.ini"});
  CHECK(s.name == "grid");
  // The [sweep] lines are blanked, the rest kept on its own lines.
  CHECK(s.base_text == "[run]\nsteps = 10\n\n\n\n\n[eval]\nevery = 5\n");
  CHECK(parse("[sweep]\nname = act-bits\nrun.seed = 1|2\n").name == "act-bits");
  CHECK(parse("[sweep]\nmodel.init_from = \"\" | a.pt\n").keys[0].values ==
        std::vector<std::string>{"", "a.pt"});
}

TEST_CASE("Sweep file: cross product, zip, exclude and only") {
  const std::string grid =
      "[sweep]\ncompress.fw = none | q4 | q2\nnet.preset = 100Mbps | 1Gbps\n"
      "run.seed = 1 | 2\n";
  CHECK(count(grid) == 12);
  SECTION("the first key turns slowest") {
    const auto p = expand_points(parse(grid));
    CHECK(p[0].value("compress.fw") == "none");
    CHECK(p[1].value("run.seed") == "2");
    CHECK(p[2].value("net.preset") == "1Gbps");
    CHECK(p[4].value("compress.fw") == "q4");
    CHECK(p[11].value("compress.fw") == "q2");
  }
  SECTION("zip pairs keys") {
    const std::string zipped = grid +
                               "run.label = fp32 | direct q4 | direct q2\n"
                               "zip = compress.fw, run.label\n";
    const auto p = expand_points(parse(zipped));
    REQUIRE(p.size() == 12);
    for (const auto& point : p) {
      const std::string fw = point.value("compress.fw");
      CHECK(point.value("run.label") == (fw == "none" ? "fp32" : "direct " + fw));
    }
  }
  SECTION("two zip groups") {
    CHECK(count("[sweep]\na.x = 1|2\na.y = 3|4\nb.x = 5|6|7\nb.y = 8|9|10\nzip = a.x, a.y | b.x, "
                "b.y\n") == 6);
  }
  SECTION("exclude drops every point one condition matches") {
    CHECK(count(grid + "exclude = compress.fw=none & net.preset=1Gbps\n") == 10);
    CHECK(count(grid + "exclude = compress.fw=none & net.preset=1Gbps | run.seed=2\n") == 5);
    CHECK(count(grid + "exclude = compress.fw!=q4\n") == 4);
  }
  SECTION("only keeps the points a condition matches") {
    CHECK(count(grid + "only = run.seed=1\n") == 6);
    CHECK(count(grid + "only = run.seed=1 & compress.fw=q2 | net.preset=1Gbps & run.seed=2\n") ==
          2 + 3);
    CHECK(count(grid + "only = run.seed=1\nexclude = compress.fw=none\n") == 4);
  }
}

TEST_CASE("Sweep file: bad files are refused with the line and the problem") {
  SECTION("no [sweep], nothing listed") {
    CHECK_THAT(error_of("[run]\nsteps = 1\n"), Catch::Contains("no [sweep] section"));
    CHECK_THAT(error_of("[sweep]\nname = x\n"), Catch::Contains("lists no key"));
  }
  SECTION("empty lists and empty items") {
    CHECK_THAT(error_of("[sweep]\nrun.seed =\n"),
               Catch::Contains("grid.ini:2: 'run.seed' has an empty list"));
    CHECK_THAT(error_of("[sweep]\nrun.seed = 1 | | 2\n"), Catch::Contains("empty value"));
    CHECK_THAT(error_of("[sweep]\nrun.seed = 1 | 2 |\n"), Catch::Contains("empty value"));
  }
  SECTION("separators") {
    CHECK_THAT(error_of("[sweep]\ncompress.fw = none; q4\n"),
               Catch::Contains("grid.ini:2: ';' in [sweep]") && Catch::Contains("'|'"));
    // ';' outside [sweep] is an ordinary comment and stays in the base text.
    CHECK(parse("[run]\nsteps = 3 ; a comment\n[sweep]\nrun.seed = 1|2\n").keys.size() == 1);
  }
  SECTION("keys") {
    CHECK_THAT(error_of("[sweep]\nseed = 1 | 2\n"), Catch::Contains("unknown [sweep] key 'seed'"));
    CHECK_THAT(error_of("[sweep]\nrun.seed = 1\nrun.seed = 2\n"),
               Catch::Contains("grid.ini:3: 'run.seed' listed twice") &&
                   Catch::Contains("first on line 2"));
    CHECK_THAT(error_of("[sweep]\nrun.seed = 1 | 1\n"), Catch::Contains("listed twice"));
    CHECK_THAT(error_of("[sweep]\nrun.seed = 1\n[sweep]\nrun.steps = 2\n"),
               Catch::Contains("a second [sweep]"));
    CHECK_THAT(error_of("[sweep]\nname = ../up\nrun.seed = 1\n"),
               Catch::Contains("safe folder name"));
  }
  SECTION("zip groups") {
    CHECK_THAT(
        error_of("[sweep]\ncompress.fw = none | q4 | q2\nrun.label = a | b\nzip = compress.fw, "
                 "run.label\n"),
        Catch::Contains("equally many values") && Catch::Contains("compress.fw lists 3") &&
            Catch::Contains("run.label lists 2"));
    CHECK_THAT(error_of("[sweep]\nrun.seed = 1|2\nzip = run.seed, run.label\n"),
               Catch::Contains("'run.label' is not a key listed"));
    CHECK_THAT(error_of("[sweep]\nrun.seed = 1|2\nzip = run.seed\n"),
               Catch::Contains("at least two"));
    CHECK_THAT(error_of("[sweep]\na.x = 1|2\na.y = 1|2\nzip = a.x, a.y | a.x, a.y\n"),
               Catch::Contains("more than one group"));
    CHECK_THAT(error_of("[sweep]\na.x = 1|1\na.y = 2|2\nzip = a.x, a.y\n"),
               Catch::Contains("a.x=1, a.y=2 is listed twice"));
  }
  SECTION("two spellings of one value (SweepKey::canonical) are one run, both named") {
    SweepFile s = parse("[sweep]\ncompress.fw = q4 | q2 | q4:nearest\n");
    CHECK(expand_points(s).size() == 3);  // as written, the three differ
    s.keys[0].canonical = {"q4", "q2", "q4"};
    CHECK_THROWS_WITH(expand_points(s),
                      "/tmp/s/grid.ini:2: compress.fw=q4 and compress.fw=q4:nearest are one run "
                      "spelled two ways (both mean compress.fw=q4): list it once");
    // In a zip group the combination counts: another label makes another point.
    s = parse(
        "[sweep]\ncompress.fw = q4 | q4:nearest\nrun.label = a | b\nzip = compress.fw, "
        "run.label\n");
    s.keys[0].canonical = {"q4", "q4"};
    CHECK(expand_points(s).size() == 2);
    s.keys[1].values = {"a", "a"};
    CHECK_THROWS_WITH(expand_points(s), Catch::Contains("compress.fw=q4, run.label=a and "
                                                        "compress.fw=q4:nearest, run.label=a"));
  }
  SECTION("conditions") {
    const std::string grid = "[sweep]\ncompress.fw = none | q4\nrun.seed = 1 | 2\n";
    CHECK_THAT(error_of(grid + "exclude = net.preset=1Gbps\n"),
               Catch::Contains("grid.ini:4: exclude: 'net.preset' is not a key listed"));
    CHECK_THAT(error_of(grid + "exclude = compress.fw=q3\n"),
               Catch::Contains("never takes the value 'q3'") && Catch::Contains("none | q4"));
    CHECK_THAT(error_of(grid + "only = compress.fw\n"), Catch::Contains("not KEY=VALUE"));
    CHECK_THAT(error_of(grid + "only = run.seed=1 &\n"), Catch::Contains("empty term"));
    CHECK_THAT(error_of(grid + "only = run.seed=3\n"), Catch::Contains("never takes"));
    CHECK_THAT(error_of(grid + "only = run.seed=1 & run.seed=2\n"),
               Catch::Contains("leave no point"));
  }
}
