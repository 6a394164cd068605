// OptionSet: typed binding, validation, INI files and --set overrides.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
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
  SECTION("an unknown key with no near one points to the command's --help") {
    const auto message = [&o] {
      try {
        o.set("timing.bandwidth", "1Gbps");
      } catch (const slowpipe::UsageError& e) {
        return std::string(e.what());
      }
      return std::string("(no error)");
    };
    CHECK(message() ==
          "unknown key 'timing.bandwidth' (slowpipe train --help lists the keys)");  // default
    o.set_help_command("timing");
    CHECK(message() == "unknown key 'timing.bandwidth' (slowpipe timing --help lists the keys)");
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

namespace {

namespace fs = std::filesystem;

// A fresh folder for one test, under the build tree's working directory.
fs::path scratch_dir(const std::string& name) {
  fs::path dir = fs::absolute("test_options_tmp") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// The UsageError message of `body`, or "" when it does not throw one.
template <typename F>
std::string usage_error_of(F&& body) {
  try {
    body();
  } catch (const slowpipe::UsageError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("OptionSet: a key set twice in one INI file names both lines") {
  Cfg c;
  auto o = make(c);
  const fs::path path = scratch_dir("dup") / "dup.ini";
  SECTION("same section twice") {
    write_file(path, "[run]\nsteps = 7\nflag = yes\n\n[run]\nsteps = 8\n");
    const std::string msg = usage_error_of([&] { o.load_ini(path.string()); });
    INFO(msg);
    CHECK(contains(msg, path.string() + ":6:"));
    CHECK(contains(msg, "duplicate key 'run.steps'"));
    CHECK(contains(msg, "line 2"));
  }
  SECTION("a dotted key repeating a section's key") {
    write_file(path, "run.steps = 7\n[run]\nsteps = 8\n");
    const std::string msg = usage_error_of([&] { o.load_ini(path.string()); });
    CHECK(contains(msg, ":3: duplicate key 'run.steps' (already set on line 1)"));
  }
  SECTION("across files a later file overrides") {
    const fs::path second = path.parent_path() / "second.ini";
    write_file(path, "[run]\nsteps = 7\n");
    write_file(second, "[run]\nsteps = 8\n");
    o.load_ini(path.string());
    o.load_ini(second.string());
    CHECK(c.steps == 8);
  }
}

TEST_CASE("OptionSet: --config that is not a small readable text file is refused") {
  Cfg c;
  auto o = make(c);
  const fs::path dir = scratch_dir("files");
  SECTION("a directory") {
    const std::string msg = usage_error_of([&] { o.load_ini(dir.string()); });
    CHECK(contains(msg, "'" + dir.string() + "' is a directory"));
  }
  SECTION("/dev/zero") {
    const std::string msg = usage_error_of([&] { o.load_ini("/dev/zero"); });
    CHECK(contains(msg, "'/dev/zero' is a character device"));
  }
  SECTION("a FIFO, without waiting for a writer") {
    const fs::path fifo = dir / "fifo.ini";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const std::string msg = usage_error_of([&] { o.load_ini(fifo.string()); });
    CHECK(contains(msg, "is a FIFO"));
  }
  SECTION("a file that cannot be opened") {
    const std::string msg = usage_error_of([&] { o.load_ini((dir / "missing.ini").string()); });
    CHECK(contains(msg, "cannot open config file"));
    CHECK(contains(msg, "No such file or directory"));
    if (geteuid() != 0) {  // root reads any file
      const fs::path locked = dir / "locked.ini";
      write_file(locked, "[run]\nsteps = 3\n");
      fs::permissions(locked, fs::perms::none);
      CHECK(contains(usage_error_of([&] { o.load_ini(locked.string()); }), "Permission denied"));
    }
  }
  SECTION("a file larger than the cap") {
    const fs::path big = dir / "big.ini";
    write_file(big, "");
    fs::resize_file(big, static_cast<uintmax_t>(slowpipe::OptionSet::kMaxIniBytes) + 1);
    CHECK(contains(usage_error_of([&] { o.load_ini(big.string()); }), "larger than 16 MiB"));
  }
  SECTION("a NUL byte names the line") {
    const fs::path nul = dir / "nul.ini";
    const char text[] = "[run]\nsteps = 7\nfl\0ag = yes\n";
    write_file(nul, std::string(text, sizeof text - 1));
    const std::string msg = usage_error_of([&] { o.load_ini(nul.string()); });
    CHECK(contains(msg, nul.string() + ":3: NUL byte"));
    CHECK(c.steps == 10);  // nothing of the file was applied
  }
  SECTION("an empty file and a UTF-8 byte order mark are fine") {
    const fs::path empty = dir / "empty.ini";
    write_file(empty, "");
    o.load_ini(empty.string());
    write_file(empty, "\xEF\xBB\xBF[run]\nsteps = 5\n");
    o.load_ini(empty.string());
    CHECK(c.steps == 5);
  }
}

TEST_CASE("OptionSet: empty values are refused where the type has no empty value") {
  Cfg c;
  auto o = make(c);
  std::string out = "run.h5";
  o.add_nonempty("run.out", out, "output");
  for (const char* key : {"run.steps", "optim.lr", "run.flag", "model.name", "run.out"}) {
    INFO(key);
    const std::string msg = usage_error_of([&] { o.set_assignment(std::string(key) + "="); });
    CHECK(contains(msg, std::string("empty value for '") + key + "'"));
    CHECK(contains(usage_error_of([&] { o.set(key, "  "); }), "empty value"));
  }
  CHECK(out == "run.h5");
  o.set_assignment("data.path=");  // a free string may be empty
  CHECK(c.path.empty());
  // An INI line with an empty value is refused the same way, with its line.
  const fs::path path = scratch_dir("empty") / "e.ini";
  write_file(path, "[run]\nsteps =\n");
  CHECK(contains(usage_error_of([&] { o.load_ini(path.string()); }),
                 ":2: empty value for 'run.steps'"));
}

TEST_CASE("OptionSet: relative paths in an INI file resolve against the file's folder") {
  std::string init_from, data_path, out;
  slowpipe::OptionSet o;
  o.add_path("model.init_from", init_from, "checkpoint");
  o.add_path("data.path", data_path, "data");
  o.add("run.out", out, "output: stays relative to the working directory");
  const fs::path dir = scratch_dir("paths") / "presets";
  fs::create_directories(dir);
  const fs::path ini = dir / "p.ini";
  write_file(ini,
             "[model]\ninit_from = ../ckpt/pre.pt\n[data]\npath = corpus.txt\n[run]\nout = "
             "results/r.h5\n");
  SECTION("from the file's own folder and from elsewhere alike") {
    o.load_ini(ini.string());
    CHECK(init_from == (dir.parent_path() / "ckpt" / "pre.pt").string());
    CHECK(data_path == (dir / "corpus.txt").string());
    CHECK(out == "results/r.h5");
    // A relative --config name gives the same absolute paths.
    init_from.clear();
    data_path.clear();
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.parent_path());
    o.load_ini("presets/p.ini");
    fs::current_path(cwd);
    CHECK(init_from == (dir.parent_path() / "ckpt" / "pre.pt").string());
    CHECK(data_path == (dir / "corpus.txt").string());
  }
  SECTION("absolute and empty values stay as written") {
    write_file(ini, "[model]\ninit_from = /abs/pre.pt\n[data]\npath =\n");
    o.load_ini(ini.string());
    CHECK(init_from == "/abs/pre.pt");
    CHECK(data_path.empty());
  }
  SECTION("--set values stay relative to the working directory") {
    o.load_ini(ini.string());
    o.set_assignment("data.path=corpus.txt");
    o.set("model.init_from", "../x.pt");
    CHECK(data_path == "corpus.txt");
    CHECK(init_from == "../x.pt");
  }
  SECTION("text parsed in memory resolves against the folder it is given") {
    o.load_ini_text("data.path = a/b.txt\n", "preset", "/base");
    CHECK(data_path == "/base/a/b.txt");
    o.load_ini_text("data.path = a/b.txt\n", "preset", "");
    CHECK(data_path == "a/b.txt");
  }
  CHECK(o.options().front().type == "path");
}
