// Units: bandwidths, durations and byte sizes as users write them.
#include <catch2/catch.hpp>
#include <string>

#include "common/errors.h"
#include "common/units.h"

using slowpipe::parse_bandwidth_bps;
using slowpipe::parse_bytes;
using slowpipe::parse_duration_s;

namespace {

template <class Parse>
std::string error_of(Parse parse, const std::string& text) {
  try {
    parse("net.x", text);
  } catch (const slowpipe::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("Units: bandwidth uses decimal prefixes") {
  CHECK(parse_bandwidth_bps("k", "100Mbps") == Approx(1e8));
  CHECK(parse_bandwidth_bps("k", "1Gbps") == Approx(1e9));
  CHECK(parse_bandwidth_bps("k", "10 Gbit/s") == Approx(1e10));
  CHECK(parse_bandwidth_bps("k", "0.79Gbps") == Approx(7.9e8));
  CHECK(parse_bandwidth_bps("k", "5000") == Approx(5000));
  CHECK(parse_bandwidth_bps("k", "1kbps") == 1e3);
  CHECK(parse_bandwidth_bps("k", "1Kbps") == 1e3);
  CHECK(parse_bandwidth_bps("k", "2Tb/s") == 2e12);
  CHECK(parse_bandwidth_bps("k", "1Mibps") == 1048576.0);
  CHECK_THROWS_AS(parse_bandwidth_bps("k", "fast"), slowpipe::UsageError);
  CHECK_THROWS_AS(parse_bandwidth_bps("k", "0Mbps"), slowpipe::UsageError);
  CHECK_THROWS_AS(parse_bandwidth_bps("k", "-1Mbps"), slowpipe::UsageError);
}

TEST_CASE("Units: B is a byte and b a bit, case-sensitively") {
  SECTION("bandwidth: Bps and B/s are bytes per second") {
    CHECK(parse_bandwidth_bps("k", "1GBps") == 8e9);  // was read as 1 Gbit/s
    CHECK(parse_bandwidth_bps("k", "100MB/s") == 8e8);
    CHECK(parse_bandwidth_bps("k", "1Bps") == 8);
    CHECK(parse_bandwidth_bps("k", "1GiB/s") == 8.0 * 1073741824.0);
    CHECK(parse_bandwidth_bps("k", "1Gb/s") == 1e9);
  }
  SECTION("sizes: b and bit are bits") {
    CHECK(parse_bytes("k", "8Mb") == 1e6);  // was read as 8 megabytes
    CHECK(parse_bytes("k", "8Mbit") == 1e6);
    CHECK(parse_bytes("k", "1b") == 0.125);
    CHECK(parse_bytes("k", "2MB") == 2e6);
    CHECK(parse_bytes("k", "64MiB") == 64.0 * 1048576);
    CHECK(parse_bytes("k", "1 KiB") == 1024);
    CHECK(parse_bytes("k", "1kB") == 1000);
    CHECK(parse_bytes("k", "1000") == 1000);
  }
  SECTION("lower-case prefixes other than k, and upper-case units, are refused") {
    for (const char* bad : {"100mbps", "1gbps", "1GBPS", "1Gbit", "1GB", "10Mbps/s", "1mB/s"})
      CHECK_THROWS_AS(parse_bandwidth_bps("k", bad), slowpipe::UsageError);
    for (const char* bad : {"1mb", "1gB", "1GiBs", "1MBit", "1bits", "1Bytes"})
      CHECK_THROWS_AS(parse_bytes("k", bad), slowpipe::UsageError);
    for (const char* bad : {"10MS", "1S", "2Ms", "1sec", "1m"})
      CHECK_THROWS_AS(parse_duration_s("k", bad), slowpipe::UsageError);
  }
  SECTION("an unknown unit names the key and lists the accepted forms") {
    const std::string e = error_of(parse_bandwidth_bps, "10Gbsp");
    CHECK_THAT(e, Catch::Contains("net.x") && Catch::Contains("'Gbsp'") &&
                      Catch::Contains("bit/s") && Catch::Contains("Bps") && Catch::Contains("Ki"));
    CHECK_THAT(error_of(parse_bytes, "1GBs"), Catch::Contains("[PREFIX]bit"));
    CHECK_THAT(error_of(parse_duration_s, "10 parsecs"), Catch::Contains("ms, us, ns"));
  }
}

TEST_CASE("Units: durations") {
  CHECK(parse_duration_s("k", "10ms") == Approx(0.01));
  CHECK(parse_duration_s("k", "67ms") == 0.067);  // exact: divided by 1e3
  CHECK(parse_duration_s("k", "2.5us") == Approx(2.5e-6));
  CHECK(parse_duration_s("k", "1") == 1);
  CHECK(parse_duration_s("k", "0") == 0);
  CHECK(parse_duration_s("k", "2min") == 120);
  CHECK(parse_duration_s("k", "1h") == 3600);
  CHECK(parse_duration_s("k", " 5 ns ") == Approx(5e-9));
  CHECK_THROWS_AS(parse_duration_s("k", "10 parsecs"), slowpipe::UsageError);
  CHECK(slowpipe::format_bandwidth(1e8) == "100Mbps");
  CHECK(slowpipe::format_duration(0.067) == "67ms");
}

TEST_CASE("Units: overflow, underflow, NaN and negative values are refused at parse time") {
  SECTION("overflow to infinity") {
    CHECK_THAT(error_of(parse_bytes, "1e300GB"), Catch::Contains("net.x"));
    CHECK_THAT(error_of(parse_duration_s, "1e308min"), Catch::Contains("overflows"));
    CHECK_THAT(error_of(parse_duration_s, "1e999s"), Catch::Contains("overflows"));
    CHECK_THAT(error_of(parse_bandwidth_bps, "1e300GBps"), Catch::Contains("overflows"));
    CHECK_THAT(error_of(parse_bandwidth_bps, "1e400"), Catch::Contains("overflows"));
  }
  SECTION("finite but beyond the accepted range") {
    CHECK_THAT(error_of(parse_bytes, "1e10GB"), Catch::Contains("1e18"));
    CHECK_THAT(error_of(parse_bandwidth_bps, "2e18bps"), Catch::Contains("1e18"));
    CHECK_THAT(error_of(parse_bandwidth_bps, "0.5bps"), Catch::Contains("1 bit/s"));
    CHECK_THAT(error_of(parse_duration_s, "1e13s"), Catch::Contains("1e12"));
    CHECK_THROWS_AS(parse_bytes("k", "1EB"), slowpipe::UsageError);  // no exa prefix
  }
  SECTION("underflow to zero") {
    CHECK_THAT(error_of(parse_bandwidth_bps, "1e-320bps"), Catch::Contains("underflows"));
    CHECK_THAT(error_of(parse_duration_s, "1e-400s"), Catch::Contains("underflows"));
    CHECK_THAT(error_of(parse_duration_s, "1e-320s"), Catch::Contains("underflows"));
    CHECK_THAT(error_of(parse_bytes, "1e-310b"), Catch::Contains("underflows"));
    CHECK(parse_duration_s("k", "0e-400s") == 0);  // a zero is a zero
  }
  SECTION("NaN, infinity, hex, negative and empty values") {
    for (const char* bad : {"nan", "NaN", "inf", "-inf", "infinity", "0x10", "", "  ", "-1s", "1e",
                            "e3", ".", "1..2", "1 0s", "+"}) {
      CAPTURE(bad);
      CHECK_THROWS_AS(parse_duration_s("k", bad), slowpipe::UsageError);
    }
    CHECK_THAT(error_of(parse_bytes, "-5"), Catch::Contains("negative"));
    CHECK_THAT(error_of(parse_bandwidth_bps, ""), Catch::Contains("empty"));
    CHECK(parse_duration_s("k", "-0") == 0);
    CHECK(parse_duration_s("k", "+2s") == 2);
    CHECK(parse_duration_s("k", "1e3ms") == 1);
    CHECK(parse_duration_s("k", "1.5E-3s") == 1.5e-3);
  }
  SECTION("the same checks for plain numbers") {
    using slowpipe::check_bandwidth_bps;
    using slowpipe::check_bytes;
    using slowpipe::check_duration_s;
    CHECK(check_bandwidth_bps("k", 1e9) == 1e9);
    CHECK_THROWS_AS(check_bandwidth_bps("k", 0), slowpipe::UsageError);
    CHECK_THROWS_AS(check_bandwidth_bps("k", 1e-300), slowpipe::UsageError);
    CHECK_THROWS_AS(check_bandwidth_bps("k", std::nan("")), slowpipe::UsageError);
    CHECK_THROWS_AS(check_duration_s("k", 1e300), slowpipe::UsageError);
    CHECK_THROWS_AS(check_duration_s("k", 5e-324), slowpipe::UsageError);
    CHECK_THROWS_AS(check_duration_s("k", -1), slowpipe::UsageError);
    CHECK_THROWS_AS(check_bytes("k", 1e300), slowpipe::UsageError);
    CHECK(check_bytes("k", 0) == 0);
  }
}

TEST_CASE("Units: formatted values parse back") {
  for (double bps : {1.0, 999.0, 1e3, 2.5e6, 7.9e8, 1e9, 4e12}) {
    CAPTURE(bps);
    CHECK(parse_bandwidth_bps("k", slowpipe::format_bandwidth(bps)) == Approx(bps));
  }
  for (double s : {0.0, 5e-9, 2.5e-6, 0.067, 1.0, 90.0}) {
    CAPTURE(s);
    CHECK(parse_duration_s("k", slowpipe::format_duration(s)) == Approx(s));
  }
  for (double b : {0.0, 64.0, 1536.0, 800.0 * 1024, 3.0 * 1073741824.0}) {
    CAPTURE(b);
    CHECK(parse_bytes("k", slowpipe::format_bytes(b)) == Approx(b));
  }
}
