// Input files: POSIX open(O_NONBLOCK) + fstat on the descriptor, then plain
// read(2) loops into a buffer sized from fstat (never grown by guessing).
#include "models/torch/internal/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "common/units.h"

namespace slowpipe::models {
namespace {

std::string label(const std::string& key, const std::string& path) {
  return (key.empty() ? "" : key + ": ") + "file '" + path + "'";
}

std::string file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// An open, checked, regular file; closed on scope exit.
class InputFd {
 public:
  InputFd(const std::string& path, const std::string& key, const std::string& debian_package)
      : path_(path), key_(key) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      if (err == ENOENT || err == ENOTDIR) {
        std::string msg = label(key, path) + " not found";
        if (!debian_package.empty()) {
          msg += " (it is provided by the Debian package '" + debian_package +
                 "': run scripts/install-deps.sh or apt-get install " + debian_package + ")";
        }
        throw UsageError(msg);
      }
      throw UsageError(label(key, path) + " cannot be read: " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      throw UsageError(label(key, path) + " cannot be read: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw UsageError(label(key, path) + " is " + file_type(st.st_mode) +
                       ", not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
    // Regular files never block; clear the flag so reads behave normally.
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  }
  ~InputFd() { ::close(fd_); }
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;

  uint64_t size() const { return size_; }

  // Reads up to n bytes (fewer only at the end of the file).
  std::string read(size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(fd_, &out[got], n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        // EISDIR and friends are caught by fstat; what is left is a real I/O error.
        throw DataError("error while reading " + label(key_, path_) + ": " +
                        std::strerror(errno));
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    out.resize(got);
    return out;
  }

 private:
  std::string path_, key_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{1} << 62;  // unknown: do not refuse
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

uint64_t default_input_limit_bytes() {
  return physical_memory_bytes() / 4;
}

uint64_t check_input_file(const std::string& path, const std::string& key,
                          const std::string& debian_package) {
  return InputFd(path, key, debian_package).size();
}

void check_input_dir(const std::string& path, const std::string& key) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // missing: the files inside say which
  if (!S_ISDIR(st.st_mode)) {
    throw UsageError((key.empty() ? "" : key + ": ") + "'" + path + "' is " +
                     (S_ISREG(st.st_mode) ? "a file" : file_type(st.st_mode)) +
                     ", not a directory");
  }
}

std::string read_input_file(const std::string& path, const std::string& key, uint64_t max_bytes,
                            const std::string& debian_package) {
  InputFd in(path, key, debian_package);
  if (in.size() > max_bytes) {
    throw UsageError(label(key, path) + " holds " + format_bytes(static_cast<double>(in.size())) +
                     ", more than the " + format_bytes(static_cast<double>(max_bytes)) +
                     " slowpipe can hold from one input file on this machine");
  }
  std::string bytes = in.read(static_cast<size_t>(in.size()));
  if (bytes.size() != in.size()) {
    throw DataError(label(key, path) + " shrank while being read (" +
                    std::to_string(bytes.size()) + " of " + std::to_string(in.size()) + " bytes)");
  }
  return bytes;
}

std::string read_input_prefix(const std::string& path, const std::string& key, size_t n,
                              uint64_t* file_bytes, const std::string& debian_package) {
  InputFd in(path, key, debian_package);
  if (file_bytes != nullptr) *file_bytes = in.size();
  return in.read(static_cast<size_t>(std::min<uint64_t>(n, in.size())));
}

}  // namespace slowpipe::models
