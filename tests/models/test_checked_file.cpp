// Checked-file tests: the container refuses every damaged form of itself
// (flipped bytes, truncation, appended bytes, a foreign file), and atomic writes
// leave either the old or the new file at the path, even when the writer is
// killed with SIGKILL mid-write.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <string>

#include "common/errors.h"
#include "matchers.h"
#include "models/torch/checked_file.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
using slowpipe::models::testing::TempFile;
using slowpipe::models::testing::WhatContains;

namespace {

std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// `count` distinct offsets in [0, size), each XOR-ed with a non-zero byte.
std::string flip_bytes(std::string bytes, size_t count, std::mt19937_64& rng) {
  std::set<size_t> offsets;
  while (offsets.size() < count) offsets.insert(rng() % bytes.size());
  for (size_t at : offsets) bytes[at] = static_cast<char>(bytes[at] ^ (1 + rng() % 255));
  return bytes;
}

}  // namespace

TEST_CASE("Checked file: encode/decode round trip, on disk and in memory") {
  const std::string payload = pattern(100000, 1);
  const std::string encoded = sm::encode_checked_file("test.kind", R"({"a": 1})", payload);
  CHECK(encoded.size() == sm::kCheckedFileHeaderBytes + 9 + 8 + payload.size());
  CHECK(encoded.substr(0, 8) == "SLOWPIPE");
  const sm::CheckedFile mem = sm::decode_checked_file(encoded, "mem");
  CHECK(mem.kind == "test.kind");
  CHECK(mem.metadata == R"({"a": 1})");
  CHECK(mem.payload == payload);

  TempFile f(".ckf");
  sm::write_checked_file(f.path(), "test.kind", R"({"a": 1})", payload);
  CHECK(slowpipe::models::testing::slurp(f.path()) == encoded);
  CHECK(sm::read_checked_file(f.path()).payload == payload);
  CHECK(sm::read_checked_file(f.path(), "run.save", "test.kind").metadata == R"({"a": 1})");
  const sm::CheckedFile head = sm::read_checked_file_header(f.path());
  CHECK(head.kind == "test.kind");
  CHECK(head.metadata == R"({"a": 1})");
  CHECK(head.payload.empty());
  // Empty strings are fine too.
  CHECK(sm::decode_checked_file(sm::encode_checked_file("", "", ""), "mem").payload.empty());
}

TEST_CASE("Checked file: every single-byte change and every truncation is a DataError") {
  const std::string encoded = sm::encode_checked_file("k", "meta", pattern(300, 2));
  for (size_t at = 0; at < encoded.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = encoded;
      bad[at] = static_cast<char>(bad[at] ^ (1 << bit));
      CHECK_THROWS_MATCHES(sm::decode_checked_file(bad, "flip.ckf"), slowpipe::DataError,
                           WhatContains("flip.ckf"));
    }
  }
  for (size_t keep = 0; keep < encoded.size(); ++keep) {
    CHECK_THROWS_MATCHES(sm::decode_checked_file(encoded.substr(0, keep), "cut.ckf"),
                         slowpipe::DataError, WhatContains("cut.ckf"));
  }
  CHECK_THROWS_MATCHES(sm::decode_checked_file(encoded + "x", "long.ckf"), slowpipe::DataError,
                       WhatContains("long.ckf") && WhatContains("length mismatch"));
}

TEST_CASE("Checked file: 32 random flipped bytes at random offsets are always caught") {
  const std::string encoded = sm::encode_checked_file("k", "{}", pattern(200000, 3));
  std::mt19937_64 rng(20261123);
  for (int trial = 0; trial < 200; ++trial) {
    CHECK_THROWS_MATCHES(sm::decode_checked_file(flip_bytes(encoded, 32, rng), "f.ckf"),
                         slowpipe::DataError, WhatContains("f.ckf"));
  }
}

TEST_CASE("Checked file: each failure has its own message") {
  const std::string good = sm::encode_checked_file("k", "m", pattern(1000, 4));
  auto fails_with = [](const std::string& bytes, const std::string& part) {
    CHECK_THROWS_MATCHES(sm::decode_checked_file(bytes, "x.ckf"), slowpipe::DataError,
                         WhatContains("'x.ckf'") && WhatContains(part));
  };
  fails_with("", "empty");
  fails_with("PK\x03\x04 a zip file, not ours", "not a slowpipe file");
  fails_with(good.substr(0, 20), "truncated inside its header");
  fails_with(good.substr(0, good.size() - 1), "truncated");
  std::string body = good;
  body[good.size() - 10] ^= 0x40;
  fails_with(body, "checksum mismatch");
  std::string header = good;
  header[21] ^= 0x01;  // payload length
  fails_with(header, "damaged header");
}

TEST_CASE("Checked file: a path that is not a regular file is refused before reading") {
  CHECK_THROWS_MATCHES(sm::read_checked_file("/nonexistent/x.ckf", "run.resume"),
                       slowpipe::UsageError,
                       WhatContains("run.resume") && WhatContains("/nonexistent/x.ckf") &&
                           WhatContains("not found"));
  CHECK_THROWS_MATCHES(sm::read_checked_file("/dev/zero", "run.resume"), slowpipe::UsageError,
                       WhatContains("'/dev/zero'") && WhatContains("character device"));
  const auto dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_MATCHES(sm::read_checked_file(dir, "run.resume"), slowpipe::UsageError,
                       WhatContains("directory"));
  TempFile fifo(".fifo");
  REQUIRE(::mkfifo(fifo.path().c_str(), 0600) == 0);
  CHECK_THROWS_MATCHES(sm::read_checked_file(fifo.path(), "run.resume"), slowpipe::UsageError,
                       WhatContains(fifo.path()) && WhatContains("FIFO"));
  TempFile f(".ckf");
  sm::write_checked_file(f.path(), "slowpipe.model", "{}", "x");
  CHECK_THROWS_MATCHES(sm::read_checked_file(f.path(), "run.resume", "slowpipe.resume"),
                       slowpipe::UsageError,
                       WhatContains("'slowpipe.model'") && WhatContains("'slowpipe.resume'"));
}

TEST_CASE("Atomic write: replaces the file, leaves no temporary, keeps the old file on failure") {
  TempFile f(".ckf");
  const std::string tmp = f.path() + ".tmp." + std::to_string(::getpid());
  sm::write_file_atomic(f.path(), "first");
  sm::write_file_atomic(f.path(), "second version");
  CHECK(slowpipe::models::testing::slurp(f.path()) == "second version");
  CHECK_FALSE(std::filesystem::exists(tmp));
  // The temporary cannot be created (a directory is in its way): the old file stays.
  std::filesystem::create_directory(tmp);
  CHECK_THROWS_MATCHES(sm::write_file_atomic(f.path(), "third"), slowpipe::UsageError,
                       WhatContains(f.path()));
  std::filesystem::remove(tmp);
  CHECK(slowpipe::models::testing::slurp(f.path()) == "second version");
  CHECK_THROWS_MATCHES(sm::write_file_atomic("/nonexistent/dir/x.ckf", "x"), slowpipe::UsageError,
                       WhatContains("/nonexistent/dir/x.ckf"));
}

TEST_CASE("Atomic write: a writer killed with SIGKILL mid-write never leaves a damaged file") {
  TempFile f(".ckf");
  const size_t n = size_t{4} << 20;  // 4 MiB: the kill lands inside a write most of the time
  for (int round = 0; round < 10; ++round) {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(ready[0]);
      for (unsigned v = 0;; ++v) {
        sm::write_checked_file(f.path(), "test", std::to_string(v), std::string(n, char('a' + v % 26)));
        if (v == 0) {
          const char c = 1;
          if (::write(ready[1], &c, 1) != 1) ::_exit(1);
        }
      }
    }
    ::close(ready[1]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);  // the first version is complete
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(ready[0]);
    CHECK(WIFSIGNALED(status));
    const sm::CheckedFile got = sm::read_checked_file(f.path());
    const unsigned v = static_cast<unsigned>(std::stoul(got.metadata));
    CHECK(got.payload == std::string(n, char('a' + v % 26)));
    std::remove((f.path() + ".tmp." + std::to_string(child)).c_str());
  }
}
