// Which config keys vary across the runs given, and the seed groups of
// `slowpipe summary`: runs whose configs differ only in run.seed (and in keys
// that do not change what a run computes) form one row, as mean, sample
// standard deviation and n; the order of rows by their key values, numbers and
// units by value (docs/summary.md). No libtorch here.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "study/summary/summary_stats.h"

namespace slowpipe::study {

// Config keys (without "config.") that name outputs or presentation, not what
// is computed: run.out, run.label, run.progress, run.overwrite, run.save, ...
const std::set<std::string>& non_computational_keys();

// The config keys whose value differs between two of the runs (a key absent
// from a run counts as a value of its own), in name order, leaving out the
// non-computational keys and, when `group_seeds`, run.seed.
std::vector<std::string> varying_keys(const std::vector<RunStats>& runs, bool group_seeds);

struct RunGroup {
  std::vector<const RunStats*> runs;  // in input order
};

// Runs in input order, grouped by every computational config key except
// run.seed; without `group_seeds`, one group per run. Groups keep the order in
// which their first run appears.
std::vector<RunGroup> group_runs(const std::vector<RunStats>& runs, bool group_seeds);

// One statistic over a group: mean and sample std over the runs with a finite
// value (stat.n of them), and how many runs had +infinity (target not reached).
struct GroupCell {
  MeanStd stat;
  size_t runs = 0;      // runs in the group
  size_t infinite = 0;  // runs whose value is +infinity
};
GroupCell aggregate(const RunGroup& group, const std::string& column_id);

// The order of config values in tables and legends: plain numbers, then
// bandwidths, durations and byte sizes (common/units.h: "100Mbps" < "1Gbps" <
// "10Gbps", "500us" < "2ms", "64KiB" < "1MiB"), each by its value in base
// units, then every other value by its text. Values equal in number (100Mbps,
// 100Mbit/s) compare by text, so the order is total.
bool config_value_less(const std::string& a, const std::string& b);

// Sorts `groups` stably by the values of `keys` in turn (config_value_less; a
// key absent from a group's first run sorts after every value).
void sort_groups(std::vector<RunGroup>& groups, const std::vector<std::string>& keys);

// "complete" when all agree, else the counts in order: "complete 2, diverged 1".
// `brief`: each status without its parenthesis, "running (no heartbeat since
// ...)" as "stale" (a run that most likely died).
std::string group_status(const RunGroup& group, bool brief = false);

// The value of config `key` in the group's first run: "\u2013" (an en dash)
// when absent, "\"\"" when empty.
std::string group_key_value(const RunGroup& group, const std::string& key);

}  // namespace slowpipe::study
