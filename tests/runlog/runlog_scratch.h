// A fresh, empty folder for one run-log test, under the build tree.
#pragma once

#include <filesystem>
#include <string>

namespace slowpipe::test {

inline std::string scratch(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(SLOWPIPE_BINARY_DIR) / "test_runlog_tmp" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace slowpipe::test
