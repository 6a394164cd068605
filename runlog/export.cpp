// `slowpipe export` helpers: TSV of one table, and a plot label from the run's
// own attributes (see export.h). The CLI wiring lives with the CLI.
#include "runlog/export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "runlog/runlog.h"

namespace slowpipe::runlog {

void export_table(const std::string& h5_path, const std::string& table, std::ostream& out,
                  std::ostream& warnings) {
  const Table t = read_table(h5_path, table);
  for (const auto& column : t.skipped) {
    warnings << "warning: run log " << h5_path << ": column " << table << "/" << column
             << " is unreadable and left out (the run did not finish; a kill cut its creation "
                "short)\n";
  }
  write_tsv(t, out);
}

std::string run_label(const std::string& h5_path) {
  const std::map<std::string, std::string> attrs = read_attributes(h5_path);
  auto value = [&](const std::string& key) {
    auto it = attrs.find(key);
    return it == attrs.end() ? std::string() : it->second;
  };
  if (!value("config.run.label").empty()) return value("config.run.label");
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"", "config.model.name"},
      {"fw=", "config.compress.fw"},
      {"bw=", "config.compress.bw"},
      {"net=", "config.net.preset"},
  };
  std::string label;
  for (const auto& [prefix, key] : parts) {
    const std::string v = value(key);
    if (v.empty()) continue;
    label += (label.empty() ? "" : " ") + prefix + v;
  }
  if (!label.empty()) return label;
  return std::filesystem::path(h5_path).stem().string();
}

namespace {

// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SSZ"; NaN when it is not that.
double parse_utc(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return NAN;
  return static_cast<double>(timegm(&tm));
}

double stale_after_s() {
  if (const char* v = std::getenv("SLOWPIPE_HEARTBEAT_STALE_S")) {
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end != v && *end == '\0' && x >= 0) return x;
  }
  return kHeartbeatStale_s;
}

}  // namespace

std::string display_status(const std::map<std::string, std::string>& attrs, double longest_step_s,
                           double now_unix_s) {
  const auto status = attrs.find("status");
  if (status == attrs.end()) return "unknown";
  if (status->second != "running") return status->second;
  const auto beat = attrs.find("heartbeat");
  if (beat == attrs.end()) return status->second;  // a log from before heartbeats
  const double at = parse_utc(beat->second);
  if (std::isnan(at)) return status->second;
  const double age = now_unix_s - at;
  const double limit =
      std::max(stale_after_s(), 3 * (std::isfinite(longest_step_s) ? longest_step_s : 0.0));
  if (age <= limit) return status->second;
  char buf[128];
  std::snprintf(buf, sizeof buf, "running (no heartbeat since %s, %.0f s ago)",
                beat->second.c_str(), age);
  return buf;
}

std::string display_status(const std::string& h5_path) {
  const auto attrs = read_attributes(h5_path);
  double longest = 0;
  const auto status = attrs.find("status");
  if (status != attrs.end() && status->second == "running") {
    try {
      const Table t = read_table(h5_path, "train");
      if (t.has_column("step_time_s"))
        for (double x : t.column("step_time_s"))
          if (std::isfinite(x)) longest = std::max(longest, x);
    } catch (const std::exception&) {
      // No train table yet: the heartbeat alone decides.
    }
  }
  return display_status(attrs, longest, static_cast<double>(std::time(nullptr)));
}

}  // namespace slowpipe::runlog
