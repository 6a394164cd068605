// OptionSet: typed binding, validation, INI files and --set overrides.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "common/errors.h"
#include "common/options.h"

namespace {

struct Cfg {
  int steps = 10;
  double lr = 0.1;
  bool flag = false;
  std::string name = "gpt";
  std::string path;
};

slowpipe::OptionSet make(Cfg& c) {
  slowpipe::OptionSet o;
  o.add("run.steps", c.steps, "steps", 1, 1000);
  o.add("optim.lr", c.lr, "lr", 0.0, 10.0);
  o.add("run.flag", c.flag, "flag");
  o.add_choice("model.name", c.name, {"gpt", "cnn", "mlp"}, "model");
  o.add("data.path", c.path, "path");
  return o;
}

}  // namespace

TEST_CASE("OptionSet: sets typed values and reports them resolved") {
  Cfg c;
  auto o = make(c);
  o.set("run.steps", "42");
  o.set_assignment("optim.lr=0.003");
  o.set("run.flag", "yes");
  o.set("model.name", "cnn");
  CHECK(c.steps == 42);
  CHECK(c.lr == Approx(0.003));
  CHECK(c.flag);
  CHECK(c.name == "cnn");
  const auto r = o.resolved();
  REQUIRE(r.size() == 5);
  CHECK(r.front().first == "data.path");
  CHECK(o.get("optim.lr") == "0.003");
}

TEST_CASE("OptionSet: unknown keys and bad values are usage errors") {
  Cfg c;
  auto o = make(c);
  SECTION("unknown key suggests the nearest") {
    try {
      o.set("run.stesp", "3");
      FAIL("no throw");
    } catch (const slowpipe::UsageError& e) {
      CHECK(std::string(e.what()).find("did you mean 'run.steps'") != std::string::npos);
    }
  }
  SECTION("non-integer") {
    CHECK_THROWS_AS(o.set("run.steps", "ten"), slowpipe::UsageError);
  }
  SECTION("trailing garbage") {
    CHECK_THROWS_AS(o.set("run.steps", "10x"), slowpipe::UsageError);
  }
  SECTION("out of range") {
    CHECK_THROWS_AS(o.set("run.steps", "0"), slowpipe::UsageError);
  }
  SECTION("nan") {
    CHECK_THROWS_AS(o.set("optim.lr", "nan"), slowpipe::UsageError);
  }
  SECTION("bad choice") {
    CHECK_THROWS_AS(o.set("model.name", "rnn"), slowpipe::UsageError);
  }
  SECTION("bad bool") {
    CHECK_THROWS_AS(o.set("run.flag", "maybe"), slowpipe::UsageError);
  }
  SECTION("no equals sign") {
    CHECK_THROWS_AS(o.set_assignment("run.steps"), slowpipe::UsageError);
  }
  CHECK(c.steps == 10);  // nothing was changed by a failed set
}

TEST_CASE("OptionSet: INI files with sections, comments and errors with line numbers") {
  Cfg c;
  auto o = make(c);
  const std::string path = "test_options_tmp.ini";
  {
    std::ofstream f(path);
    f << "# a comment\n[run]\nsteps = 7 ; trailing\n\n[optim]\nlr=0.5\n[model]\nname =  cnn \n";
  }
  o.load_ini(path);
  CHECK(c.steps == 7);
  CHECK(c.lr == Approx(0.5));
  CHECK(c.name == "cnn");  // values are trimmed before any parser sees them
  {
    std::ofstream f(path);
    f << "[run]\nsteps = 7\nbogus = 1\n";
  }
  try {
    o.load_ini(path);
    FAIL("no throw");
  } catch (const slowpipe::UsageError& e) {
    CHECK(std::string(e.what()).find(":3:") != std::string::npos);
    CHECK(std::string(e.what()).find("run.bogus") != std::string::npos);
  }
  std::remove(path.c_str());
  CHECK_THROWS_AS(o.load_ini("does/not/exist.ini"), slowpipe::UsageError);
}
