// The front's hand-off to slowpipe-torch; see handoff.h.
#include "cli/handoff.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace slowpipe::cli {

std::string torch_binary_path() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (self.parent_path() / kTorchBinaryName).string();
}

int hand_off(const std::string& command, char** argv) {
  const std::string path = torch_binary_path();
  if (path.empty()) {
    std::fprintf(stderr,
                 "slowpipe: cannot run '%s': cannot find this binary's folder (/proc/self/exe), "
                 "where %s lives\n",
                 command.c_str(), kTorchBinaryName);
    return 1;
  }
  ::execv(path.c_str(), argv);
  const int err = errno;
  if (err == ENOENT) {
    std::fprintf(stderr,
                 "slowpipe: cannot run '%s': %s not found (the commands that need libtorch run "
                 "in %s, built beside slowpipe: cmake --build BUILD_DIR --target slowpipe-torch)\n",
                 command.c_str(), path.c_str(), kTorchBinaryName);
  } else {
    std::fprintf(stderr, "slowpipe: cannot run '%s': cannot execute %s: %s\n", command.c_str(),
                 path.c_str(), std::strerror(err));
  }
  return 1;
}

}  // namespace slowpipe::cli
