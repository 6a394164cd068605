// Units: bandwidths, durations and byte sizes as users write them.
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "common/units.h"

TEST_CASE("Units: bandwidth uses decimal prefixes") {
  using slowpipe::parse_bandwidth_bps;
  CHECK(parse_bandwidth_bps("k", "100Mbps") == Approx(1e8));
  CHECK(parse_bandwidth_bps("k", "1Gbps") == Approx(1e9));
  CHECK(parse_bandwidth_bps("k", "10 Gbit/s") == Approx(1e10));
  CHECK(parse_bandwidth_bps("k", "0.79Gbps") == Approx(7.9e8));
  CHECK(parse_bandwidth_bps("k", "5000") == Approx(5000));
  CHECK_THROWS_AS(parse_bandwidth_bps("k", "fast"), slowpipe::UsageError);
  CHECK_THROWS_AS(parse_bandwidth_bps("k", "100MB/s"), slowpipe::UsageError);
  CHECK_THROWS_AS(parse_bandwidth_bps("k", "0Mbps"), slowpipe::UsageError);
  CHECK_THROWS_AS(parse_bandwidth_bps("k", "-1Mbps"), slowpipe::UsageError);
}

TEST_CASE("Units: durations and bytes") {
  CHECK(slowpipe::parse_duration_s("k", "10ms") == Approx(0.01));
  CHECK(slowpipe::parse_duration_s("k", "2.5us") == Approx(2.5e-6));
  CHECK(slowpipe::parse_duration_s("k", "1") == Approx(1));
  CHECK_THROWS_AS(slowpipe::parse_duration_s("k", "10 parsecs"), slowpipe::UsageError);
  CHECK(slowpipe::parse_bytes("k", "64MiB") == Approx(64.0 * 1048576));
  CHECK(slowpipe::parse_bytes("k", "2MB") == Approx(2e6));
  CHECK(slowpipe::format_bandwidth(1e8) == "100Mbps");
  CHECK(slowpipe::format_duration(0.067) == "67ms");
}
