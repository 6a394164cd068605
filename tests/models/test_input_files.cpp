// Data input validation: paths that are not regular readable files, and files
// too large for their format or for memory, are refused before anything is read
// or allocated, with a message naming the key and the file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "common/errors.h"
#include "matchers.h"
#include "models/torch/data_registry.h"
#include "models/torch/internal/fashion_mnist.h"
#include "models/torch/internal/file_bytes.h"
#include "models/torch/internal/idx.h"
#include "models/torch/internal/input_file.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
using sm::testing::TempFile;
using sm::testing::WhatContains;

namespace {

sm::DataConfig text_at(const std::string& path) {
  sm::DataConfig cfg;
  cfg.name = "text";
  cfg.path = path;
  return cfg;
}


// A sparse file of `bytes` bytes starting with `head`: no disk space used.
void make_sparse(const std::string& path, const std::string& head, uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  REQUIRE(::ftruncate(fd, static_cast<off_t>(bytes)) == 0);
  ::close(fd);
}

}  // namespace

TEST_CASE("Data path: a directory, a device or a FIFO is a usage error naming key and file") {
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_MATCHES(sm::make_dataset(text_at(dir), 31), slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains(dir) &&
                           WhatContains("is a directory"));
  CHECK_THROWS_MATCHES(sm::make_dataset(text_at("/dev/zero"), 31), slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains("'/dev/zero'") &&
                           WhatContains("character device"));
  TempFile fifo(".fifo");
  REQUIRE(::mkfifo(fifo.path().c_str(), 0600) == 0);
  CHECK_THROWS_MATCHES(sm::make_dataset(text_at(fifo.path()), 31), slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains("FIFO"));
  // The same checks without loading anything, for the trainer's up-front validation.
  CHECK_THROWS_MATCHES(sm::validate_data_config(text_at("/dev/zero")), slowpipe::UsageError,
                       WhatContains("data.path"));
  CHECK_NOTHROW(sm::validate_data_config(sm::DataConfig{}));  // GCIDE, installed
  // gcide's default file overridden by a device: the key is data.path too.
  sm::DataConfig gcide;
  gcide.path = "/dev/zero";
  CHECK_THROWS_MATCHES(sm::make_dataset(gcide, 31), slowpipe::UsageError,
                       WhatContains("data.path"));
  // fashion-mnist wants a directory: a file is refused.
  TempFile file(".txt");
  file.write("x");
  sm::DataConfig fashion;
  fashion.name = "fashion-mnist";
  fashion.path = file.path();
  CHECK_THROWS_MATCHES(sm::make_dataset(fashion, 0), slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains("not a directory"));
  fashion.path = "/dev";  // a directory without the files: the first one is named
  CHECK_THROWS_MATCHES(sm::make_dataset(fashion, 0), slowpipe::UsageError,
                       WhatContains("/dev/train-images-idx3-ubyte.gz"));
}

TEST_CASE("Data path: an unreadable file is a usage error") {
  if (::geteuid() == 0) {
    WARN("running as root: every file is readable, nothing to test");
    return;
  }
  TempFile f(".txt");
  f.write(std::string(1000, 'a'));
  ::chmod(f.path().c_str(), 0);
  CHECK_THROWS_MATCHES(sm::make_dataset(text_at(f.path()), 31), slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains("cannot be read"));
}

TEST_CASE("Data path: a file larger than the limit is refused before it is read") {
  TempFile f(".txt");
  f.write(std::string(1000, 'a'));
  CHECK_THROWS_MATCHES(sm::read_file_bytes(f.path(), "", "data.path", 999), slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains(f.path()));
  CHECK(sm::read_file_bytes(f.path(), "", "data.path", 1000).size() == 1000);
  // A 1 TiB sparse file is larger than any memory limit here: refused at once,
  // by make_dataset and by the up-front check, without reading a byte.
  TempFile huge(".txt");
  make_sparse(huge.path(), "text", uint64_t{1} << 40);
  CHECK_THROWS_MATCHES(sm::make_dataset(text_at(huge.path()), 31), slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains(huge.path()));
  CHECK_THROWS_MATCHES(sm::validate_data_config(text_at(huge.path())), slowpipe::UsageError,
                       WhatContains("more than"));
}

TEST_CASE("Data path: gzip that inflates past the limit stops inflating") {
  const std::string zeros(1 << 20, '\0');
  const std::string bomb = sm::testing::gzip_bytes(zeros);  // ~1 KiB
  TempFile f(".gz");
  f.write(bomb);
  CHECK_THROWS_MATCHES(sm::read_file_bytes(f.path(), "", "data.path", 100000),
                       slowpipe::UsageError,
                       WhatContains("data.path") && WhatContains("inflates to more than"));
  CHECK(sm::read_file_bytes(f.path(), "", "data.path", 1 << 20) == zeros);
  CHECK(sm::gunzip_prefix(bomb, "mem", 10) == std::string(10, '\0'));
}

TEST_CASE("IDX: sizes are checked against the header before the data is read") {
  SECTION("a plain file much larger than its header announces") {
    TempFile f(".idx");
    make_sparse(f.path(), slowpipe::models::testing::idx_header(0x00000801, {5}), uint64_t{1} << 40);
    CHECK_THROWS_MATCHES(sm::read_idx(f.path(), 1, ""), slowpipe::DataError,
                         WhatContains(f.path()) && WhatContains("size mismatch"));
  }
  SECTION("a gzip stream holding more than its header announces") {
    TempFile f(".gz");
    f.write(sm::testing::gzip_bytes(slowpipe::models::testing::idx_header(0x00000801, {5}) + std::string(100000, '\1')));
    CHECK_THROWS_MATCHES(sm::read_idx(f.path(), 1, ""), slowpipe::DataError,
                         WhatContains(f.path()) && WhatContains("size mismatch"));
  }
  SECTION("dimensions whose product wraps around 64 bits") {
    // 2^22 * 2^21 * 2^21 = 2^64: a header-only file used to parse as an empty array.
    const std::string header = slowpipe::models::testing::idx_header(0x00000803, {1u << 22, 1u << 21, 1u << 21});
    CHECK_THROWS_MATCHES(sm::parse_idx(header, 3, "wrap.idx"), slowpipe::DataError,
                         WhatContains("wrap.idx") && WhatContains("impossible size"));
  }
  SECTION("a device or a directory as an IDX file") {
    CHECK_THROWS_MATCHES(sm::read_idx("/dev/zero", 1, "", "data.path"), slowpipe::UsageError,
                         WhatContains("data.path") && WhatContains("device"));
  }
}
