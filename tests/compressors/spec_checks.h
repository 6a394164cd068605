// Shared checks of spec parsing for the codec tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"

namespace slowpipe::test {

// Each (spec, words) pair: validate_spec refuses the spec (as a forward) with
// a UsageError whose message contains `words`.
inline void require_refused(const std::vector<std::pair<std::string, std::string>>& bad) {
  for (const auto& [spec, what] : bad) {
    INFO(spec);
    try {
      compressors::validate_spec(spec, false);
      FAIL("accepted");
    } catch (const UsageError& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
    }
  }
}

}  // namespace slowpipe::test
