// Checks of the paths slowpipe writes (see output_paths.h).
#include "config/output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/errors.h"

namespace slowpipe::config {
namespace {

namespace fs = std::filesystem;

// Creates and removes a file in `dir`: the one test that holds for root (to
// whom access(2) says yes everywhere) and for folders that take no new files
// (/proc, /sys, a read-only mount). Returns why it failed, empty when it did not.
std::string cannot_create_in(const fs::path& dir) {
  const fs::path probe = dir / (".slowpipe-probe." + std::to_string(getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno == EEXIST ? "" : std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

// What a file that is not a regular file is, for messages.
std::string file_kind(const fs::file_status& st) {
  switch (st.type()) {
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// `dir` (existing or to be created) takes new files: its nearest existing
// ancestor is a folder in which a file can be created. `what` starts messages.
void check_creatable(const std::string& what, const fs::path& dir) {
  std::error_code ec;
  fs::path probe = dir.empty() ? fs::path(".") : dir;
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  if (probe.empty()) probe = ".";
  if (!fs::is_directory(probe, ec)) {
    throw UsageError(what + ": " + probe.string() + " is not a folder");
  }
  const std::string why = cannot_create_in(probe);
  if (!why.empty()) {
    throw UsageError(what + ": cannot create files in folder " + probe.string() + " (" + why + ")");
  }
}

}  // namespace

void check_writable_target(const std::string& key, const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && fs::is_directory(st)) {
    throw UsageError(key + " = " + path + " is a folder; name a file, e.g. " + path + "/run.h5");
  }
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    throw UsageError(key + " = " + path + " is " + file_kind(st) +
                     ", not a regular file; name a file to write");
  }
  if (fs::exists(st) && access(path.c_str(), W_OK) != 0) {
    throw UsageError(key + " = " + path + " exists and is not writable");
  }
  // The nearest existing ancestor decides: the missing folders are created.
  check_creatable(key + " = " + path, fs::path(path).parent_path());
}

void check_writable_folder(const std::string& name, const std::string& dir) {
  const std::string what = name + " " + dir;
  if (dir.empty()) throw UsageError(name + " is empty: name a folder");
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st)) {
    throw UsageError(what + " is " +
                     (fs::is_regular_file(st) ? std::string("a file") : file_kind(st)) +
                     ", not a folder: name a folder to write into");
  }
  check_creatable(what, dir);
}

}  // namespace slowpipe::config
