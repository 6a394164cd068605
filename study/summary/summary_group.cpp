// Varying keys and seed groups (see summary_group.h).
#include "study/summary/summary_group.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "common/errors.h"
#include "common/units.h"

namespace slowpipe::study {
namespace {

constexpr const char* kSeedKey = "run.seed";
constexpr const char* kAbsent = "\x1f(absent)";  // no real value looks like this

std::string value_of(const RunStats& run, const std::string& key) {
  auto it = run.config.find(key);
  return it == run.config.end() ? kAbsent : it->second;
}

bool ignored(const std::string& key, bool group_seeds) {
  return non_computational_keys().count(key) > 0 || (group_seeds && key == kSeedKey);
}

// (class, value, text): class 0 a plain number, 1 a bandwidth, 2 a duration,
// 3 a byte size, 4 anything else (value 0).
std::tuple<int, double, std::string> value_order(const std::string& text) {
  if (!text.empty()) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size() && std::isfinite(v)) return {0, v, text};
  }
  using Parser = double (*)(const std::string&, const std::string&);
  const Parser parsers[] = {parse_bandwidth_bps, parse_duration_s, parse_bytes};
  for (int c = 0; c < 3; ++c) {
    try {
      return {c + 1, parsers[c]("", text), text};
    } catch (const UsageError&) {
    }
  }
  return {4, 0.0, text};
}

}  // namespace

bool config_value_less(const std::string& a, const std::string& b) {
  return value_order(a) < value_order(b);
}

void sort_groups(std::vector<RunGroup>& groups, const std::vector<std::string>& keys) {
  auto less = [&](const RunGroup& x, const RunGroup& y) {
    for (const auto& key : keys) {
      const std::string a = value_of(*x.runs.front(), key), b = value_of(*y.runs.front(), key);
      if (a == b) continue;
      if (a == kAbsent || b == kAbsent) return b == kAbsent;
      return config_value_less(a, b);
    }
    return false;
  };
  std::stable_sort(groups.begin(), groups.end(), less);
}

const std::set<std::string>& non_computational_keys() {
  // Where outputs go, how progress shows, how often the log is flushed and
  // checkpointed, and where AQ-SGD keeps its buffers: none changes a number
  // the run computes (docs/summary.md).
  static const std::set<std::string> keys = {
      "run.out",         "run.label",         "run.progress",         "run.overwrite",
      "run.save",        "run.flush_every",   "run.checkpoint_every", "run.checkpoint_keep",
      "compress.aq_dir", "compress.aq_store", "trace.every",
  };
  return keys;
}

std::vector<std::string> varying_keys(const std::vector<RunStats>& runs, bool group_seeds) {
  std::set<std::string> all;
  for (const auto& run : runs) {
    for (const auto& [key, value] : run.config) {
      if (!ignored(key, group_seeds)) all.insert(key);
    }
  }
  std::vector<std::string> out;
  for (const auto& key : all) {
    for (size_t i = 1; i < runs.size(); ++i) {
      if (value_of(runs[i], key) != value_of(runs[0], key)) {
        out.push_back(key);
        break;
      }
    }
  }
  return out;
}

std::vector<RunGroup> group_runs(const std::vector<RunStats>& runs, bool group_seeds) {
  std::vector<RunGroup> groups;
  std::vector<std::map<std::string, std::string>> identities;
  for (const auto& run : runs) {
    std::map<std::string, std::string> identity;
    for (const auto& [key, value] : run.config) {
      if (!ignored(key, true)) identity[key] = value;
    }
    size_t g = groups.size();
    if (group_seeds) {
      for (size_t i = 0; i < identities.size(); ++i) {
        if (identities[i] == identity) g = i;
      }
    }
    if (g == groups.size()) {
      groups.emplace_back();
      identities.push_back(std::move(identity));
    }
    groups[g].runs.push_back(&run);
  }
  return groups;
}

GroupCell aggregate(const RunGroup& group, const std::string& column_id) {
  GroupCell cell;
  cell.runs = group.runs.size();
  std::vector<double> values;
  for (const RunStats* run : group.runs) {
    auto it = run->values.find(column_id);
    if (it == run->values.end()) continue;
    if (std::isinf(it->second) && it->second > 0) ++cell.infinite;
    values.push_back(it->second);
  }
  cell.stat = mean_std(values);
  return cell;
}

std::string group_status(const RunGroup& group, bool brief) {
  std::vector<std::pair<std::string, int>> counts;
  for (const RunStats* run : group.runs) {
    std::string shown = run->status;
    if (brief && shown.rfind("running (no heartbeat", 0) == 0) shown = "stale";
    if (brief) shown = shown.substr(0, shown.find(" ("));
    bool found = false;
    for (auto& [status, n] : counts) {
      if (status == shown) found = (++n, true);
    }
    if (!found) counts.emplace_back(shown, 1);
  }
  if (counts.size() == 1) return counts.front().first;
  std::string out;
  for (const auto& [status, n] : counts) {
    out += (out.empty() ? "" : ", ") + status + " " + std::to_string(n);
  }
  return out;
}

std::string group_key_value(const RunGroup& group, const std::string& key) {
  const std::string v = value_of(*group.runs.front(), key);
  if (v == kAbsent) return "\u2013";  // an en dash, as every missing cell
  return v.empty() ? "\"\"" : v;
}

}  // namespace slowpipe::study
