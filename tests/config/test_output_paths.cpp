// The checks of the paths slowpipe writes (config/output_paths.h): a file to
// write (run.out, run.save) and a folder to write into (retime --out) are
// refused with one line where they cannot be written, before anything is made.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/errors.h"
#include "config/output_paths.h"

namespace fs = std::filesystem;
namespace cf = slowpipe::config;

namespace {

// A fresh folder under the temporary directory, removed at the end of the scope.
struct PathsTempDir {
  fs::path path =
      fs::temp_directory_path() / ("slowpipe-test-output-paths." + std::to_string(::getpid()));
  PathsTempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~PathsTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("check_writable_folder: a folder that exists or can be made, and takes files") {
  PathsTempDir dir;
  const std::string file = (dir.path / "run.h5").string();
  std::ofstream(file) << "x";
  SECTION("an existing folder, or one to create below one: passes and makes nothing") {
    CHECK_NOTHROW(cf::check_writable_folder("--out", dir.path.string()));
    CHECK_NOTHROW(cf::check_writable_folder("--out", (dir.path / "a" / "b").string()));
    CHECK_FALSE(fs::exists(dir.path / "a"));
    CHECK(fs::directory_iterator(dir.path)->path().filename() == "run.h5");  // no probe left
  }
  SECTION("a file, a device, or a path through one") {
    CHECK_THROWS_WITH(cf::check_writable_folder("--out", file),
                      "--out " + file + " is a file, not a folder: name a folder to write into");
    CHECK_THROWS_WITH(
        cf::check_writable_folder("--out", "/dev/full"),
        "--out /dev/full is a character device, not a folder: name a folder to write into");
    CHECK_THROWS_WITH(cf::check_writable_folder("--out", "/dev/full/x"),
                      "--out /dev/full/x: /dev/full is not a folder");
    CHECK_THROWS_WITH(cf::check_writable_folder("--out", file + "/x"),
                      Catch::Contains("run.h5 is not a folder"));
  }
  SECTION("a folder that takes no new files (also for root)") {
    CHECK_THROWS_WITH(cf::check_writable_folder("--out", "/proc"),
                      Catch::StartsWith("--out /proc: cannot create files in folder /proc ("));
    CHECK_THROWS_WITH(cf::check_writable_folder("--out", "/proc/x/y"),
                      Catch::StartsWith("--out /proc/x/y: cannot create files in folder /proc"));
  }
  SECTION("empty") {
    CHECK_THROWS_AS(cf::check_writable_folder("--out", ""), slowpipe::UsageError);
  }
}

TEST_CASE("check_writable_target: a regular writable file in a folder that takes files") {
  PathsTempDir dir;
  CHECK_NOTHROW(cf::check_writable_target("run.out", (dir.path / "new" / "run.h5").string()));
  CHECK_THROWS_WITH(cf::check_writable_target("run.out", dir.path.string()),
                    Catch::Contains("is a folder; name a file"));
  CHECK_THROWS_WITH(cf::check_writable_target("run.out", "/dev/full"),
                    "run.out = /dev/full is a character device, not a regular file; name a file "
                    "to write");
  CHECK_THROWS_WITH(cf::check_writable_target("run.out", "/proc/x.h5"),
                    Catch::StartsWith("run.out = /proc/x.h5: cannot create files in folder /proc"));
}
