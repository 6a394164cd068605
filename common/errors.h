// Error types shared by every slowpipe library.
//
// UsageError: the user asked for something invalid (unknown key, bad value, bad
// spec string, missing file). The CLI prints its message and exits with code 2.
// DataError: an input file exists but is unusable (truncated, wrong magic). Exit 3.
// Everything else is a bug or an environment failure (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace slowpipe {

class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

class DataError : public std::runtime_error {
 public:
  explicit DataError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace slowpipe
