// remove_tree (common/file_tree.h): removes a whole tree, counts what it
// removed, never follows a link out of the tree, and names what it cannot remove.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "common/file_tree.h"

namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}

void touch(const fs::path& p) {
  std::ofstream(p) << "x";
}

}  // namespace

TEST_CASE("remove_tree removes nested folders and files and counts them") {
  const fs::path root = scratch("slowpipe_tree");
  fs::create_directories(root / "a" / "b" / "c");
  touch(root / "f1");
  touch(root / "a" / "f2");
  touch(root / "a" / "b" / "c" / "f3");
  // root, a, b, c and three files
  CHECK(slowpipe::remove_tree(root.string()) == 7);
  CHECK_FALSE(fs::exists(root));
}

TEST_CASE("remove_tree removes a link, never what it points to") {
  const fs::path outside = scratch("slowpipe_tree_target");
  touch(outside / "keep");
  const fs::path root = scratch("slowpipe_tree_links");
  fs::create_directory_symlink(outside, root / "to_outside");
  fs::create_symlink(outside / "keep", root / "to_file");
  CHECK(slowpipe::remove_tree(root.string()) == 3);
  CHECK_FALSE(fs::exists(root));
  CHECK(fs::exists(outside / "keep"));
  fs::remove(outside / "keep");
  fs::remove(outside);
}

TEST_CASE("remove_tree: a missing path is no error, a single file is removed") {
  const fs::path root = scratch("slowpipe_tree_single");
  CHECK(slowpipe::remove_tree((root / "missing").string()) == 0);
  touch(root / "only");
  CHECK(slowpipe::remove_tree((root / "only").string()) == 1);
  CHECK_FALSE(fs::exists(root / "only"));
  CHECK(slowpipe::remove_tree(root.string()) == 1);
}

TEST_CASE("remove_tree names the entry it cannot remove") {
  if (::geteuid() == 0) return;  // root may remove from a read-only folder
  const fs::path root = scratch("slowpipe_tree_locked");
  fs::create_directory(root / "locked");
  touch(root / "locked" / "inside");
  ::chmod((root / "locked").c_str(), 0500);
  try {
    slowpipe::remove_tree(root.string());
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("inside") != std::string::npos);
  }
  ::chmod((root / "locked").c_str(), 0700);
  CHECK(slowpipe::remove_tree(root.string()) == 3);
}
