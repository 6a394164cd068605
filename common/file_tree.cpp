// remove_tree: a depth-first nftw(3) walk that unlinks files and links and
// removes folders once they are empty (common/file_tree.h).
#include "common/file_tree.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slowpipe {
namespace {

// nftw's callback takes no user pointer: one walk at a time per thread.
thread_local uint64_t removed_count = 0;
thread_local int failed_errno = 0;
thread_local std::string failed_path;

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = (type == FTW_DP) ? ::rmdir(path) : ::unlink(path);
  if (rc != 0) {
    failed_errno = errno;
    failed_path = path;
    return 1;  // stop the walk
  }
  ++removed_count;
  return 0;
}

}  // namespace

uint64_t remove_tree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return 0;
    throw std::runtime_error("cannot remove '" + path + "': " + std::strerror(errno));
  }
  removed_count = 0;
  failed_errno = 0;
  failed_path.clear();
  // FTW_DEPTH: a folder after its contents; FTW_PHYS: links are not followed.
  const int rc = ::nftw(path.c_str(), &remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (rc != 0) {
    const int err = failed_errno != 0 ? failed_errno : errno;
    throw std::runtime_error("cannot remove '" + (failed_path.empty() ? path : failed_path) +
                             "': " + std::strerror(err));
  }
  return removed_count;
}

}  // namespace slowpipe
