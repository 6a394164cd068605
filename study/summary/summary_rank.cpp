// Ranking seed groups and their Pareto fronts (see summary_rank.h).
#include "study/summary/summary_rank.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "common/numbers.h"
#include "study/summary/internal/plot_series.h"
#include "study/summary/summary_columns.h"

namespace slowpipe::study {
namespace {

// The mean over the group's finite values of `column_id`; NaN when none.
double group_mean(const RunGroup& group, const std::string& column_id) {
  const GroupCell cell = aggregate(group, column_id);
  return cell.stat.n > 0 ? cell.stat.mean : kNaN;
}

}  // namespace

bool group_diverged(const RunGroup& group) {
  return std::any_of(group.runs.begin(), group.runs.end(),
                     [](const RunStats* r) { return r->status == "diverged"; });
}

double group_rank_value(const RunGroup& group, const std::string& column_id) {
  const bool higher = column_higher_is_better(column_id);
  if (group_diverged(group)) return higher ? -kInf : kInf;
  const GroupCell cell = aggregate(group, column_id);
  if (cell.stat.n > 0) return cell.stat.mean;
  return cell.infinite > 0 ? kInf : kNaN;
}

std::vector<bool> pareto_front(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  std::vector<bool> on(n, false);
  auto finite = [&](size_t i) { return std::isfinite(x[i]) && std::isfinite(y[i]); };
  for (size_t i = 0; i < n; ++i) {
    if (!finite(i)) continue;
    bool dominated = false;
    for (size_t j = 0; j < n && !dominated; ++j) {
      dominated =
          j != i && finite(j) && x[j] <= x[i] && y[j] <= y[i] && (x[j] < x[i] || y[j] < y[i]);
    }
    on[i] = !dominated;
  }
  return on;
}

std::vector<FrontMark> front_marks(const std::vector<RunGroup>& groups,
                                   const std::string& x_column) {
  std::vector<double> x, y;
  for (const auto& group : groups) {
    x.push_back(group_mean(group, x_column));
    y.push_back(group_rank_value(group, "train_loss"));
  }
  const std::vector<bool> on = pareto_front(x, y);
  std::vector<FrontMark> marks;
  for (size_t g = 0; g < groups.size(); ++g) {
    const bool placed = !std::isnan(x[g]) && (group_diverged(groups[g]) || std::isfinite(y[g]));
    marks.push_back(on[g] ? FrontMark::kOn : placed ? FrontMark::kOff : FrontMark::kNone);
  }
  return marks;
}

std::vector<FrontMark> time_front_marks(const std::vector<RunGroup>& groups) {
  // Groups by link bandwidth (-1: unknown), each with its own front.
  std::map<double, std::vector<size_t>> by_bandwidth;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double bps = run_bandwidth_bps(*groups[g].runs.front());
    by_bandwidth[std::isnan(bps) ? -1 : bps].push_back(g);
  }
  std::vector<FrontMark> marks(groups.size(), FrontMark::kNone);
  for (const auto& [bps, members] : by_bandwidth) {
    std::vector<RunGroup> subset;
    for (size_t g : members) subset.push_back(groups[g]);
    const std::vector<FrontMark> sub = front_marks(subset, "sim_time_s");
    for (size_t i = 0; i < members.size(); ++i) marks[members[i]] = sub[i];
  }
  return marks;
}

Ranking rank_groups(const std::vector<RunGroup>& groups, const std::string& by) {
  const bool higher = column_higher_is_better(by);
  std::vector<double> v;
  v.reserve(groups.size());
  for (const auto& group : groups) v.push_back(group_rank_value(group, by));
  // Better first; NaN (no value) after every value.
  auto better = [&](size_t a, size_t b) {
    if (std::isnan(v[a]) || std::isnan(v[b])) return !std::isnan(v[a]) && std::isnan(v[b]);
    return higher ? v[a] > v[b] : v[a] < v[b];
  };
  Ranking r;
  r.order.resize(groups.size());
  std::iota(r.order.begin(), r.order.end(), size_t{0});
  std::stable_sort(r.order.begin(), r.order.end(), better);
  r.rank.assign(groups.size(), 0);
  for (size_t k = 0; k < r.order.size(); ++k) {
    const size_t g = r.order[k];
    if (std::isnan(v[g])) break;
    const bool tie = k > 0 && v[r.order[k - 1]] == v[g];
    r.rank[g] = tie ? r.rank[r.order[k - 1]] : k + 1;
  }
  r.front_bytes = front_marks(groups, "wire_bytes");
  r.front_time = time_front_marks(groups);
  return r;
}

}  // namespace slowpipe::study
