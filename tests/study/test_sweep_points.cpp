// Sweep points: names (readable, file-system safe, unique), labels, and the
// resolution of every point against the train options before anything runs.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/errors.h"
#include "study/sweeps/sweep_points.h"

namespace {

namespace fs = std::filesystem;
using slowpipe::UsageError;
using slowpipe::study::expand_points;
using slowpipe::study::job_command;
using slowpipe::study::parse_sweep_text;
using slowpipe::study::point_ini_text;
using slowpipe::study::point_label;
using slowpipe::study::point_names;
using slowpipe::study::read_sweep_file;
using slowpipe::study::resolve_sweep;
using slowpipe::study::ResolvedPoint;
using slowpipe::study::ResolvedSweep;
using slowpipe::study::shell_quote;
using slowpipe::study::SweepPoint;
using slowpipe::study::varying_keys;

std::vector<SweepPoint> points_of(const std::string& sweep_section) {
  return expand_points(parse_sweep_text("[sweep]\n" + sweep_section, "g.ini", "/tmp"));
}

std::vector<std::string> names_of(const std::string& sweep_section) {
  const auto p = points_of(sweep_section);
  return point_names(p, varying_keys(p));
}

// A sweep file in a fresh folder, resolved; the error message if it fails.
struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("sweep_points_" + std::to_string(::getpid()));
  Fixture() { fs::create_directories(dir); }
  ~Fixture() { fs::remove_all(dir); }
  ResolvedSweep resolve(const std::string& text, const std::vector<std::string>& sets = {},
                        int scale = 1, const std::vector<std::string>& scale_keys = {}) {
    const fs::path file = dir / "grid.ini";
    std::ofstream(file) << text;
    return resolve_sweep(read_sweep_file(file.string()),
                         {{}, sets, (dir / "out").string(), scale, scale_keys});
  }
  std::string error(const std::string& text, const std::vector<std::string>& sets = {}) {
    try {
      resolve(text, sets);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

const char* kTiny =
    "[model]\nname = mlp\n[data]\nname = fashion-mnist\nlimit = 64\n[pipeline]\nstages = 2\n"
    "[run]\nsteps = 2\n";

}  // namespace

TEST_CASE("Sweep names: from the varying keys, safe and readable") {
  const auto names = names_of(
      "compress.fw = none | aq(q2) | q4:group=64\nnet.preset = 100Mbps\n"
      "run.seed = 1 | 2\n");
  REQUIRE(names.size() == 6);
  CHECK(names[0] == "fw=none_seed=1");  // net.preset does not vary: not in the name
  CHECK(names[3] == "fw=aq-q2_seed=2");
  CHECK(names[4] == "fw=q4-group-64_seed=1");
  for (const auto& n : names) {
    CHECK(n.find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+=-") ==
          std::string::npos);
  }
  SECTION("preset, name and path keys are named after their section") {
    CHECK(names_of("net.preset = 100Mbps | 1Gbps\nmodel.name = mlp | cnn\n")[0] ==
          "net=100Mbps_model=mlp");
  }
  SECTION("short names that clash fall back to the whole key") {
    CHECK(names_of("optim.lr = 0.1 | 0.2\nfoo.lr = 1 | 2\n")[0] == "optim.lr=0.1_foo.lr=1");
  }
  SECTION("values that clash after sanitising are told apart") {
    const auto n = names_of("run.label = a b | a/b | a-b\n");
    CHECK(n == std::vector<std::string>{"label=a-b", "label=a-b-2", "label=a-b-3"});
  }
  SECTION("run.label stays out of names when another key varies") {
    const auto n = names_of(
        "compress.fw = none | q4\nrun.label = fp32 | 4-bit\nzip = compress.fw, "
        "run.label\n");
    CHECK(n == std::vector<std::string>{"fw=none", "fw=q4"});
  }
  SECTION("long names are cut with a hash, still unique") {
    const std::string a(300, 'a');
    const auto n = names_of("run.label = " + a + "x | " + a + "y\n");
    CHECK(n[0].size() < 210);
    CHECK(n[0] != n[1]);
  }
  SECTION("labels keep values as written") {
    const auto p = points_of("compress.fw = aq(q2) | q4\nrun.seed = 1 | 2\n");
    CHECK(point_label(p[0], varying_keys(p)) == "fw=aq(q2) seed=1");
  }
}

TEST_CASE("Sweep resolution: --scale multiplies the listed integer keys of every point") {
  Fixture f;
  const auto get = [](const ResolvedPoint& p, const std::string& k) {
    for (const auto& [key, v] : p.resolved) {
      if (key == k) return v;
    }
    return std::string("(missing)");
  };
  const std::string text = std::string(kTiny) + "[sweep]\ncompress.fw = none | q4\n";
  const ResolvedSweep one = f.resolve(text, {}, 1, {"run.steps"});
  const ResolvedSweep three = f.resolve(text, {}, 3, {"run.steps"});
  CHECK(get(one.points[1], "run.steps") == "2");
  CHECK(get(three.points[0], "run.steps") == "6");
  CHECK(get(three.points[1], "run.steps") == "6");
  CHECK(three.scale == 3);
  CHECK(slowpipe::study::default_sweep_dir("a1", 1, true) == "results/reproduce/a1");
  CHECK(slowpipe::study::default_sweep_dir("a1", 2, true) == "results/reproduce/a1-x2");
  CHECK(slowpipe::study::default_sweep_dir("grid", 1, false) == "results/grid");
  CHECK_THROWS_WITH(f.resolve(text, {}, 2, {"compress.fw"}), Catch::Contains("not an integer"));
}

namespace {

std::string get(const ResolvedPoint& p, const std::string& k) {
  for (const auto& [key, v] : p.resolved) {
    if (key == k) return v;
  }
  return "(missing)";
}

}  // namespace

TEST_CASE("Sweep resolution: every point checked before anything runs") {
  Fixture f;
  SECTION("a good sweep: run.out, label and input paths resolved") {
    const ResolvedSweep s = f.resolve(std::string(kTiny) + "[sweep]\ncompress.fw = none | q4\n");
    REQUIRE(s.points.size() == 2);
    CHECK(get(s.points[1], "run.out") == "fw=q4.h5");  // relative to the sweep's folder
    CHECK(get(s.points[1], "run.label") == "fw=q4");
    CHECK(get(s.points[1], "compress.fw") == "q4");
    CHECK(get(s.points[0], "run.steps") == "2");
    std::vector<std::string> extra;
    const std::string ini = point_ini_text(s, s.points[1], extra);
    CHECK_THAT(ini, Catch::Contains("compress.fw = q4\n") && Catch::Contains("run.steps = 2\n") &&
                        Catch::Contains("run.out = fw=q4.h5\n"));
    CHECK_THAT(ini, !Catch::Contains((f.dir / "out").string()));  // nothing ties it to its folder
    CHECK(extra.empty());
    const std::string job = job_command(s, s.points[1], "/bin/slowpipe");
    CHECK_THAT(job, Catch::Contains("--set compress.fw=q4") &&
                        Catch::Contains("cd " + (f.dir / "out").string() + " && ") &&
                        Catch::Contains("--resume " + (f.dir / "out" / "fw=q4.h5").string()));
    CHECK_THAT(job, !Catch::Contains("compress.bw="));  // a default: not repeated
  }
  SECTION("output paths inside the sweep's folder are relative to it, others absolute") {
    const std::string text = std::string(kTiny) + "[sweep]\nrun.seed = 1 | 2\n";
    const ResolvedSweep in = f.resolve(text, {"run.save=" + (f.dir / "out" / "m.pt").string()});
    CHECK(get(in.points[0], "run.save") == "m.pt");
    const ResolvedSweep out = f.resolve(text, {"run.save=" + (f.dir / "m.pt").string()});
    CHECK(get(out.points[0], "run.save") == (f.dir / "m.pt").string());
    const ResolvedSweep sub = f.resolve(text, {"compress.aq_dir=" + (f.dir / "out").string()});
    CHECK(get(sub.points[0], "compress.aq_dir") == ".");
  }
  SECTION("unknown keys and bad values name the line") {
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\ncompress.fx = none | q4\n"),
               Catch::Contains("grid.ini:11: compress.fx") && Catch::Contains("unknown key") &&
                   Catch::Contains("did you mean 'compress.fw'"));
    CHECK_THAT(
        f.error(std::string(kTiny) + "[sweep]\nrun.seed = 1, 2\n"),
        Catch::Contains("grid.ini:11: run.seed = '1, 2'") && Catch::Contains("separated by '|'"));
    // A bad spec in the last point fails the whole sweep up front.
    CHECK_THAT(
        f.error(std::string(kTiny) + "[sweep]\nrun.seed = 1 | 2 | 3\ncompress.fw = q4 | q9\n"),
        Catch::Contains("grid.ini:12: compress.fw = 'q9'"));
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\nrun.out = a.h5 | b.h5\n"),
               Catch::Contains("run.out cannot be swept"));
  }
  SECTION("channel specs are compared by their canonical form: one run is not run twice") {
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\ncompress.fw = q4 | none | q4:nearest\n"),
               Catch::Contains("grid.ini:11: compress.fw=q4 and compress.fw=q4:nearest are one "
                               "run spelled two ways (both mean compress.fw=q4)"));
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\ncompress.bw = ef(q8) | ef(q8:nearest)\n"),
               Catch::Contains("compress.bw=ef(q8) and compress.bw=ef(q8:nearest)"));
    CHECK_THAT(f.error(std::string(kTiny) +
                       "[sweep]\npipeline.replicas = 2\ncompress.grad = q4 | q4:nearest\n"),
               Catch::Contains("compress.grad=q4 and compress.grad=q4:nearest"));
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\nrun.seed = 1 | 2 | 1\n"),
               Catch::Contains("run.seed=1 is listed twice"));
    // Specs that differ stay two points.
    CHECK(f.resolve(std::string(kTiny) + "[sweep]\ncompress.fw = q4 | q4:stochastic\n")
              .points.size() == 2);
  }
  SECTION("configurations train would refuse name the point") {
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\npipeline.microbatches = 1 | 3\n"),
               Catch::Contains("point 2 (microbatches=3)"));
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\ndata.path = a.idx | b.idx\n"),
               Catch::Contains("point 1") && Catch::Contains("no such file"));
  }
  SECTION("--set applies to every point but may not change a swept key") {
    const ResolvedSweep s =
        f.resolve(std::string(kTiny) + "[sweep]\nrun.seed = 1 | 2\n", {"optim.lr=0.5"});
    for (const auto& p : s.points) {
      CHECK(std::count(p.resolved.begin(), p.resolved.end(),
                       std::make_pair(std::string("optim.lr"), std::string("0.5"))) == 1);
    }
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\nrun.seed = 1 | 2\n", {"run.seed=3"}),
               Catch::Contains("the sweep varies this key"));
    CHECK_THAT(f.error(std::string(kTiny) + "[sweep]\nrun.seed = 1 | 2\n", {"run.stesp=3"}),
               Catch::Contains("--set run.stesp=3") && Catch::Contains("unknown key"));
  }
}

TEST_CASE("Shell quoting survives any value") {
  CHECK(shell_quote("compress.fw=q4") == "compress.fw=q4");
  CHECK(shell_quote("compress.fw=aq(q2)") == "'compress.fw=aq(q2)'");
  CHECK(shell_quote("run.label=it's") == "'run.label=it'\\''s'");
  CHECK(shell_quote("") == "''");
}

TEST_CASE("Sweep selection: --point and --only pick the points, or say what exists") {
  using slowpipe::study::PointSelector;
  using slowpipe::study::select_points;
  using Picked = std::vector<size_t>;
  Fixture f;
  const ResolvedSweep s = f.resolve(std::string(kTiny) +
                                    "[sweep]\ncompress.fw = none | q4\nrun.seed = 1 | 2\n"
                                    "run.label = a,b | c\nzip = compress.fw, run.label\n");
  REQUIRE(s.points.size() == 4);  // fw=none seed=1, fw=none seed=2, fw=q4 seed=1, fw=q4 seed=2
  const auto pick = [&s](std::vector<std::string> points, std::vector<std::string> only) {
    return select_points(s, PointSelector{std::move(points), std::move(only)});
  };
  const auto error = [&](std::vector<std::string> points, std::vector<std::string> only) {
    try {
      pick(std::move(points), std::move(only));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(pick({}, {}) == Picked{0, 1, 2, 3});
  SECTION("--point: a number as --dry-run prints it, or a name; repeatable, in sweep order") {
    CHECK(pick({"2"}, {}) == Picked{1});
    CHECK(pick({"fw=q4_seed=1", "1"}, {}) == Picked{0, 2});
    CHECK_THAT(error({"0"}, {}),
               Catch::Contains("numbered 1 to 4") && Catch::Contains("4  fw=q4_seed=2"));
    CHECK_THAT(error({"5"}, {}), Catch::Contains("the sweep has 4 points"));
    CHECK_THAT(error({"fw=q8_seed=1"}, {}),
               Catch::Contains("no point has that name") && Catch::Contains("1  fw=none_seed=1"));
  }
  SECTION("--only: every (fw, seed) pair picks exactly the point holding it") {
    for (const std::string fw : {"none", "q4"}) {
      for (const std::string seed : {"1", "2"}) {
        Picked want;
        for (size_t i = 0; i < s.points.size(); ++i) {
          if (s.points[i].point.value("compress.fw") == fw &&
              s.points[i].point.value("run.seed") == seed)
            want.push_back(i);
        }
        REQUIRE(want.size() == 1);
        CHECK(pick({}, {"fw=" + fw + ",seed=" + seed}) == want);  // short names, one argument
        CHECK(pick({}, {"compress.fw=" + fw, "run.seed=" + seed}) == want);  // full, repeated
      }
    }
  }
  SECTION("--only: terms on one key are alternatives; values keep their ','") {
    CHECK(pick({}, {"seed=1", "seed=2", "fw=q4"}) == Picked{2, 3});
    CHECK(pick({}, {"label=a,b"}) == Picked{0, 1});
    CHECK(pick({}, {"label=a,b,seed=2"}) == Picked{1});
    CHECK(pick({"3", "4"}, {"seed=2"}) == Picked{3});
  }
  SECTION("a selector that picks nothing is refused, naming what exists") {
    CHECK_THAT(error({}, {"fw=q8"}), Catch::Contains("compress.fw takes none | q4"));
    CHECK_THAT(error({}, {"fx=q4"}),
               Catch::Contains("expected KEY=VALUE") && Catch::Contains("compress.fw (fw)"));
    CHECK_THAT(error({}, {"q4"}), Catch::Contains("expected KEY=VALUE"));
    CHECK_THAT(error({"1"}, {"fw=q4"}), Catch::Contains("no point of the sweep matches --point 1 "
                                                        "--only fw=q4"));
  }
}

TEST_CASE("Sweep selection: a combination the sweep excludes matches nothing") {
  Fixture f;
  const ResolvedSweep s = f.resolve(std::string(kTiny) +
                                    "[sweep]\ncompress.fw = none | q4\nrun.seed = 1 | 2\n"
                                    "exclude = compress.fw=q4 & run.seed=2\n");
  REQUIRE(s.points.size() == 3);
  CHECK_THROWS_WITH(
      slowpipe::study::select_points(s, {{}, {"fw=q4,seed=2"}}),
      Catch::Contains("no point of the sweep matches") && Catch::Contains("3  fw=q4_seed=1"));
}
