// `slowpipe summary --rank BY`: the seed groups ordered by one statistic
// column, with a rank, and whether each group lies on the Pareto front of
// (final train loss, bytes on the wire per step) and of (final train loss,
// simulated run time). Definitions: docs/summary.md. Plot figures reuse the
// front (plot_figures.h). Leaves out the printing (summary_table.h). No
// libtorch here.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "study/summary/summary_group.h"

namespace slowpipe::study {

// Whether a run of the group diverged (status "diverged").
bool group_diverged(const RunGroup& group);

// The group's value of `column_id` for ranking: the mean over its finite
// values; +infinity when only infinite values (time to target never reached);
// the worst value (+inf where lower is better, -inf where higher is better,
// column_higher_is_better) when a run diverged; NaN when no run has a value.
double group_rank_value(const RunGroup& group, const std::string& column_id);

// Which points lie on the Pareto front when both coordinates are minimised:
// point i is on it unless some j has x_j <= x_i and y_j <= y_i with one of
// them strictly smaller. Equal points are all on it. A point with a
// non-finite coordinate (NaN: no value; inf: diverged) is never on the front
// and dominates nothing.
std::vector<bool> pareto_front(const std::vector<double>& x, const std::vector<double>& y);

// A front cell of the table: on it, off it, or not placed (a coordinate is
// missing; a diverged group is placed off the front).
enum class FrontMark { kOn, kOff, kNone };

struct Ranking {
  std::vector<size_t> order;  // group indices, best first; groups without a value last
  std::vector<size_t> rank;   // per group index: 1-based, ties share the lower rank; 0: no value
  std::vector<FrontMark> front_bytes;  // per group index
  std::vector<FrontMark> front_time;   // per group index, per bandwidth (time_front_marks)
};

// Ranks `groups` by `by` (a summary column id; lower is better unless
// column_higher_is_better) and marks the two fronts. Ties keep input order.
Ranking rank_groups(const std::vector<RunGroup>& groups, const std::string& by);

// The front marks of (group_rank_value(train_loss), mean of `x_column`).
std::vector<FrontMark> front_marks(const std::vector<RunGroup>& groups,
                                   const std::string& x_column);

// The front marks of (train loss, sim_time_s) among the groups of each link
// bandwidth (run_bandwidth_bps; unknown counts as one bandwidth): a simulated
// time compares only with times on the same link.
std::vector<FrontMark> time_front_marks(const std::vector<RunGroup>& groups);

}  // namespace slowpipe::study
