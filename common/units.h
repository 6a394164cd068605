// Physical quantities from text, as users write them on the command line:
// bandwidth "100Mbps", "1Gbps", "10Gbit/s", "500Mbit"; durations "10ms", "67ms",
// "2.5us", "1s"; byte sizes "64MiB", "2MB", "1000". Decimal prefixes for bits per
// second (1 Mbps = 1e6 bit/s), binary prefixes only with the "i" forms (KiB/MiB/GiB).
#pragma once

#include <cstdint>
#include <string>

namespace slowpipe {

// Bits per second. Accepts bps, Kbps, Mbps, Gbps, Tbps (and "bit/s" forms);
// a bare number is bits per second. Throws UsageError naming `key`.
double parse_bandwidth_bps(const std::string& key, const std::string& text);
// Seconds. Accepts s, ms, us, ns; a bare number is seconds.
double parse_duration_s(const std::string& key, const std::string& text);
// Bytes. Accepts B, KB, MB, GB (decimal) and KiB, MiB, GiB (binary).
double parse_bytes(const std::string& key, const std::string& text);

// Human-readable forms, used in tables and plot labels: "100Mbps", "10ms".
std::string format_bandwidth(double bps);
std::string format_duration(double seconds);
std::string format_bytes(double bytes);

}  // namespace slowpipe
