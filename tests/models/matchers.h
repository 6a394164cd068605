// A Catch2 matcher on exceptions: the message contains a given text. Combine with
// && to require several parts (file name and package, file and parameter, ...).
#pragma once

#include <catch2/catch.hpp>
#include <exception>
#include <string>
#include <utility>

namespace slowpipe::models::testing {

class WhatContains : public Catch::MatcherBase<std::exception> {
 public:
  explicit WhatContains(std::string part) : part_(std::move(part)) {}
  bool match(const std::exception& e) const override {
    return std::string(e.what()).find(part_) != std::string::npos;
  }
  std::string describe() const override { return "message contains \"" + part_ + "\""; }

 private:
  std::string part_;
};

}  // namespace slowpipe::models::testing
