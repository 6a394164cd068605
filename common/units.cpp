// Parsing and printing of bandwidths, durations and byte sizes.
#include "common/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace slowpipe {
namespace {

// Splits "100Mbps" into 100 and "mbps" (lower-cased, spaces removed).
std::pair<double, std::string> split_number(const std::string& key, const std::string& text,
                                            const char* what) {
  std::string t;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  }
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end == t.c_str() || !std::isfinite(v) || v < 0) {
    throw UsageError("bad value for '" + key + "': '" + text + "' is not a " + what);
  }
  std::string unit(end);
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return {v, unit};
}

double lookup(const std::string& key, const std::string& text, const std::string& unit,
              const std::vector<std::pair<std::string, double>>& table, const char* what,
              const char* examples) {
  for (const auto& [name, factor] : table) {
    if (unit == name) return factor;
  }
  throw UsageError("bad value for '" + key + "': '" + text + "' is not a " + what + " (e.g. " +
                   examples + ")");
}

std::string fmt_num(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g%s", v, unit);
  return buf;
}

}  // namespace

double parse_bandwidth_bps(const std::string& key, const std::string& text) {
  const auto [v, unit] = split_number(key, text, "bandwidth");
  static const std::vector<std::pair<std::string, double>> table = {
      {"", 1},         {"bps", 1},      {"bit/s", 1},  {"b/s", 1},      {"kbps", 1e3},
      {"kbit/s", 1e3}, {"kbit", 1e3},   {"mbps", 1e6}, {"mbit/s", 1e6}, {"mbit", 1e6},
      {"gbps", 1e9},   {"gbit/s", 1e9}, {"gbit", 1e9}, {"tbps", 1e12},  {"tbit/s", 1e12}};
  const double bps = v * lookup(key, text, unit, table, "bandwidth", "100Mbps, 1Gbps, 10Gbit/s");
  if (bps <= 0) throw UsageError("bad value for '" + key + "': bandwidth must be positive");
  return bps;
}

double parse_duration_s(const std::string& key, const std::string& text) {
  const auto [v, unit] = split_number(key, text, "duration");
  static const std::vector<std::pair<std::string, double>> table = {
      {"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"min", 60}};
  return v * lookup(key, text, unit, table, "duration", "10ms, 2.5us, 1s");
}

double parse_bytes(const std::string& key, const std::string& text) {
  const auto [v, unit] = split_number(key, text, "byte size");
  static const std::vector<std::pair<std::string, double>> table = {
      {"", 1},     {"b", 1},        {"kb", 1e3},        {"mb", 1e6},
      {"gb", 1e9}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}};
  return v * lookup(key, text, unit, table, "byte size", "1000, 2MB, 64MiB");
}

std::string format_bandwidth(double bps) {
  if (bps >= 1e12) return fmt_num(bps / 1e12, "Tbps");
  if (bps >= 1e9) return fmt_num(bps / 1e9, "Gbps");
  if (bps >= 1e6) return fmt_num(bps / 1e6, "Mbps");
  if (bps >= 1e3) return fmt_num(bps / 1e3, "Kbps");
  return fmt_num(bps, "bps");
}

std::string format_duration(double s) {
  if (s == 0) return "0s";
  if (s >= 1) return fmt_num(s, "s");
  if (s >= 1e-3) return fmt_num(s * 1e3, "ms");
  if (s >= 1e-6) return fmt_num(s * 1e6, "us");
  return fmt_num(s * 1e9, "ns");
}

std::string format_bytes(double b) {
  if (b >= 1073741824.0) return fmt_num(b / 1073741824.0, "GiB");
  if (b >= 1048576.0) return fmt_num(b / 1048576.0, "MiB");
  if (b >= 1024.0) return fmt_num(b / 1024.0, "KiB");
  return fmt_num(b, "B");
}

}  // namespace slowpipe
