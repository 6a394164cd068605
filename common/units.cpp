// Parsing and printing of bandwidths, durations and byte sizes (rules in units.h).
//
// A value is NUMBER [spaces] [UNIT]. NUMBER is a plain decimal with an optional
// exponent; UNIT is matched exactly (case-sensitive) as PREFIX + BASE. Scaling
// is one multiplication by an exact factor (or a division by an exact power of
// ten for ms/us/ns), so "67ms" is the same double as 0.067.
#include "common/units.h"

#include <cctype>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/errors.h"

namespace slowpipe {
namespace {

const char* const kBandwidthForms =
    "accepted: a number of bit/s, or NUMBER UNIT with UNIT = [PREFIX]bps, [PREFIX]bit/s or "
    "[PREFIX]b/s for bits per second, [PREFIX]Bps or [PREFIX]B/s for bytes per second; PREFIX = "
    "k or K, M, G, T, P (x1000) or Ki, Mi, Gi, Ti (x1024); case-sensitive, e.g. 100Mbps, "
    "10Gbit/s, 125MB/s";
const char* const kDurationForms =
    "accepted: a number of seconds, or NUMBER UNIT with UNIT = s, ms, us, ns, min or h; "
    "case-sensitive, e.g. 10ms, 2.5us, 1s";
const char* const kBytesForms =
    "accepted: a number of bytes, or NUMBER UNIT with UNIT = [PREFIX]B for bytes, [PREFIX]b or "
    "[PREFIX]bit for bits; PREFIX = k or K, M, G, T, P (x1000) or Ki, Mi, Gi, Ti (x1024); "
    "case-sensitive, e.g. 1000, 2MB, 64MiB, 8Mb";

struct Prefix {
  const char* name;
  double factor;
};
const std::vector<Prefix>& prefixes() {
  static const std::vector<Prefix> table = {{"", 1},
                                            {"k", 1e3},
                                            {"K", 1e3},
                                            {"M", 1e6},
                                            {"G", 1e9},
                                            {"T", 1e12},
                                            {"P", 1e15},
                                            {"Ki", 1024.0},
                                            {"Mi", 1048576.0},
                                            {"Gi", 1073741824.0},
                                            {"Ti", 1099511627776.0}};
  return table;
}

// How a unit scales its number: x * multiply, or x / divide when divide != 1.
struct Scale {
  double multiply = 1;
  double divide = 1;
  double apply(double x) const { return divide != 1 ? x / divide : x * multiply; }
};

struct Base {
  const char* name;
  double factor;
};

// [PREFIX]BASE -> factor; false if `unit` is not of that form.
bool prefixed(const std::string& unit, const std::vector<Base>& bases, Scale* scale) {
  for (const Base& b : bases) {
    const std::string base = b.name;
    if (unit.size() < base.size() || unit.compare(unit.size() - base.size(), base.size(), base))
      continue;
    const std::string p = unit.substr(0, unit.size() - base.size());
    for (const Prefix& pre : prefixes()) {
      if (p == pre.name) {
        scale->multiply = pre.factor * b.factor;  // exact: powers of 10 or 2 times 8 or 1/8
        return true;
      }
    }
  }
  return false;
}

std::string quote(const std::string& key, const std::string& text) {
  return "bad value for '" + key + "': '" + text + "'";
}

struct Parsed {
  double number = 0;
  bool nonzero = false;  // some mantissa digit is not 0
  std::string unit;
};

// Splits " 100 Mbps" into 100 and "Mbps".
Parsed split(const std::string& key, const std::string& text, const char* what, const char* forms) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  const std::string t = text.substr(b, e - b);
  if (t.empty())
    throw UsageError("bad value for '" + key + "': empty " + what + " (" + forms + ")");
  auto digit = [&](size_t i) {
    return i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]));
  };
  size_t i = 0;
  const bool negative = t[0] == '-';
  if (t[0] == '+' || t[0] == '-') ++i;
  Parsed p;
  size_t digits = 0;
  for (; digit(i); ++i, ++digits) p.nonzero |= t[i] != '0';
  if (i < t.size() && t[i] == '.') {
    for (++i; digit(i); ++i, ++digits) p.nonzero |= t[i] != '0';
  }
  if (digits == 0) {
    throw UsageError(quote(key, text) + " is not a " + what + " (" + forms + ")");
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    size_t j = i + 1;
    if (j < t.size() && (t[j] == '+' || t[j] == '-')) ++j;
    if (digit(j)) {
      while (digit(j)) ++j;
      i = j;
    }
  }
  if (negative && p.nonzero)
    throw UsageError(quote(key, text) + ": a " + what + " cannot be negative");
  const std::string number = t.substr(0, i);
  errno = 0;
  p.number = std::strtod(number.c_str(), nullptr);
  if (!std::isfinite(p.number) || (errno == ERANGE && std::fabs(p.number) > 1)) {
    throw UsageError(quote(key, text) + ": the " + what + " overflows to infinity");
  }
  p.number = std::fabs(p.number);  // "-0" is 0
  size_t u = i;
  while (u < t.size() && std::isspace(static_cast<unsigned char>(t[u]))) ++u;
  p.unit = t.substr(u);
  return p;
}

// Scales, then refuses infinity and underflow (a non-zero number that became
// zero or subnormal).
double scaled(const std::string& key, const std::string& text, const Parsed& p, Scale s,
              const char* what) {
  const double v = s.apply(p.number);
  if (!std::isfinite(v))
    throw UsageError(quote(key, text) + ": the " + what + " overflows to infinity");
  if (p.nonzero && !(v >= DBL_MIN)) {
    throw UsageError(quote(key, text) + ": the " + what + " underflows to zero");
  }
  return v;
}

std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string fmt_num(double v, const char* unit) {
  return number_text(v) + unit;
}

}  // namespace

double check_bandwidth_bps(const std::string& key, double bps) {
  if (std::isnan(bps)) throw UsageError("bad value for '" + key + "': bandwidth is not a number");
  if (bps <= 0) throw UsageError("bad value for '" + key + "': bandwidth must be positive");
  if (bps < kMinBandwidthBps) {
    throw UsageError("bad value for '" + key + "': bandwidth " + number_text(bps) +
                     " bit/s is below the smallest accepted, 1 bit/s");
  }
  if (!(bps <= kMaxBandwidthBps)) {
    throw UsageError("bad value for '" + key + "': bandwidth " + number_text(bps) +
                     " bit/s is above the largest accepted, 1e18 bit/s");
  }
  return bps;
}

double check_duration_s(const std::string& key, double s) {
  if (std::isnan(s) || s < 0) {
    throw UsageError("bad value for '" + key + "': a duration must be a number >= 0");
  }
  if (s != 0 && s < DBL_MIN) {
    throw UsageError("bad value for '" + key + "': duration underflows to zero");
  }
  if (!(s <= kMaxDurationS)) {
    throw UsageError("bad value for '" + key + "': duration " + number_text(s) +
                     " s is above the largest accepted, 1e12 s");
  }
  return s;
}

double check_bytes(const std::string& key, double bytes) {
  if (std::isnan(bytes) || bytes < 0) {
    throw UsageError("bad value for '" + key + "': a byte size must be a number >= 0");
  }
  if (bytes != 0 && bytes < DBL_MIN) {
    throw UsageError("bad value for '" + key + "': byte size underflows to zero");
  }
  if (!(bytes <= kMaxBytes)) {
    throw UsageError("bad value for '" + key + "': byte size " + number_text(bytes) +
                     " is above the largest accepted, 1e18 bytes");
  }
  return bytes;
}

double parse_bandwidth_bps(const std::string& key, const std::string& text) {
  const Parsed p = split(key, text, "bandwidth", kBandwidthForms);
  Scale s;
  static const std::vector<Base> bases = {
      {"bps", 1}, {"bit/s", 1}, {"b/s", 1}, {"Bps", 8}, {"B/s", 8}};
  if (!p.unit.empty() && !prefixed(p.unit, bases, &s)) {
    throw UsageError(quote(key, text) + " is not a bandwidth: unknown unit '" + p.unit + "' (" +
                     kBandwidthForms + ")");
  }
  return check_bandwidth_bps(key, scaled(key, text, p, s, "bandwidth"));
}

double parse_duration_s(const std::string& key, const std::string& text) {
  const Parsed p = split(key, text, "duration", kDurationForms);
  struct Entry {
    const char* name;
    Scale scale;
  };
  static const std::vector<Entry> table = {{"", {1, 1}},     {"s", {1, 1}},    {"ms", {1, 1e3}},
                                           {"us", {1, 1e6}}, {"ns", {1, 1e9}}, {"min", {60, 1}},
                                           {"h", {3600, 1}}};
  for (const Entry& e : table) {
    if (p.unit == e.name) return check_duration_s(key, scaled(key, text, p, e.scale, "duration"));
  }
  throw UsageError(quote(key, text) + " is not a duration: unknown unit '" + p.unit + "' (" +
                   kDurationForms + ")");
}

double parse_bytes(const std::string& key, const std::string& text) {
  const Parsed p = split(key, text, "byte size", kBytesForms);
  Scale s;
  static const std::vector<Base> bases = {{"B", 1}, {"bit", 0.125}, {"b", 0.125}};
  if (!p.unit.empty() && !prefixed(p.unit, bases, &s)) {
    throw UsageError(quote(key, text) + " is not a byte size: unknown unit '" + p.unit + "' (" +
                     kBytesForms + ")");
  }
  return check_bytes(key, scaled(key, text, p, s, "byte size"));
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
