// Physical quantities from text, as users write them on the command line, in
// INI files and in netsim scenarios: bandwidths "100Mbps", "10Gbit/s",
// "125MB/s"; durations "10ms", "2.5us", "1min"; sizes "64MiB", "2MB", "8Mb".
//
// Units are case-sensitive. `B` is a byte and `b` or `bit` a bit, so
// "1GBps" = 1 gigabyte/s = 8e9 bit/s and "8Mb" = 8 megabits = 1e6 bytes.
// Prefixes: k (or K), M, G, T, P are powers of 1000; Ki, Mi, Gi, Ti are powers
// of 1024. Lower-case m/g/t are not prefixes of bits or bytes (they are refused
// rather than guessed). A bare number is in the base unit (bit/s, s, bytes).
// A number may be written with a decimal point and an exponent (1.5e9); `nan`,
// `inf`, hex floats and negative values are refused.
//
// Every parsed value is also range-checked (check_*): finite, not negative, a
// non-zero value must not underflow to zero or a subnormal double, and each
// quantity has a bound below which arithmetic in the simulators cannot
// overflow (bytes * 8 / bandwidth stays finite). The same checks apply to plain
// numbers (a netsim scenario may give 1e9 instead of "1Gbps"). Errors are
// UsageErrors naming `key` and listing the accepted forms.
#pragma once

#include <string>

namespace slowpipe {

// Accepted ranges (docs/netmodel.md, "Units").
constexpr double kMinBandwidthBps = 1.0;  // 1 bit/s
constexpr double kMaxBandwidthBps = 1e18;
constexpr double kMaxDurationS = 1e12;  // about 31,700 years
constexpr double kMaxBytes = 1e18;      // 1 EB, below 2^63

// Bits per second: [prefix](bps | bit/s | b/s) or [prefix](Bps | B/s) (bytes
// per second, x8). A bare number is bit/s. Must be in [1 bit/s, 1e18 bit/s].
double parse_bandwidth_bps(const std::string& key, const std::string& text);
// Seconds: s, ms, us, ns, min, h. A bare number is seconds. In [0, 1e12 s].
double parse_duration_s(const std::string& key, const std::string& text);
// Bytes: [prefix]B, or bits as [prefix]b / [prefix]bit (/8). A bare number is
// bytes. In [0, 1e18 bytes].
double parse_bytes(const std::string& key, const std::string& text);

// Range checks of values already in base units; return the value.
double check_bandwidth_bps(const std::string& key, double bps);
double check_duration_s(const std::string& key, double seconds);
double check_bytes(const std::string& key, double bytes);

// Human-readable forms (6 significant digits), used in tables and plot labels:
// "100Mbps", "10ms"; they parse back with the functions above.
std::string format_bandwidth(double bps);
std::string format_duration(double seconds);
std::string format_bytes(double bytes);

}  // namespace slowpipe
