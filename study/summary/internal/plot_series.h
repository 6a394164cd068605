// What the comparison plots are made of: a legend per seed group (run.label,
// else the varying keys), a title line naming workload and network, what a
// channel spec says about bits and K (compressors/codecs/spec.h), a run's bandwidth
// (netmodel/net_config.h), the seed bands of curves (mean, min, max over seeds
// per step) and per-epoch means, and the points of the summary plots (one line
// per scheme and remaining varying keys, error bars over seeds). See
// docs/summary.md. No libtorch here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "study/summary/summary_group.h"
#include "study/summary/summary_stats.h"

namespace slowpipe::study {

// "fw=q4 preset=100Mbps": each varying key by its last dotted part (the whole
// key where two share it), with its value; the first run's file name when no
// key varies.
std::string legend_of(const RunGroup& group, const std::vector<std::string>& keys);

// The run.label the group's runs share; "" when one has none or they differ.
std::string group_label(const RunGroup& group);

// The legend of each group: its run.label (group_label), else legend_of(keys).
// A label that several groups with different key legends share is followed by
// the key legend in parentheses, so no two legends read alike.
std::vector<std::string> group_legends(const std::vector<RunGroup>& groups,
                                       const std::vector<std::string>& keys);

// What the runs train and where, for plot titles: "gpt fine-tuned on gcide,
// net 100Mbps" from model.name, data.name (model.init_from set: "fine-tuned
// on") and the network (net.bandwidth when set, else net.preset); "several
// workloads" or "several networks" when the runs differ in them; a part no run
// names is left out.
std::string runs_setting(const std::vector<const RunStats*>& runs);

// One seed's curve: y at each key (a step or an epoch, increasing), with a
// second x per key (the simulated time; NaN when absent). A key repeated in
// one curve counts once, with its last value.
struct SeedCurve {
  std::vector<double> key, x, y;
};
// The seed band at one key: mean, min and max of y over the seeds with a
// finite y at that key (n of them; a key only some seeds have is averaged over
// those), and the mean of their finite x (NaN when none).
struct BandPoint {
  double key = 0, x = 0, mean = 0, min = 0, max = 0;
  size_t n = 0;
};
// One point per key at which at least one seed has a finite y, by key.
std::vector<BandPoint> seed_band(const std::vector<SeedCurve>& seeds);

// Per-epoch means of `values` (rows parallel to `epoch`): one key per distinct
// finite epoch, increasing, y the mean of that epoch's finite values (NaN when
// none), x NaN.
SeedCurve epoch_means(const std::vector<double>& epoch, const std::vector<double>& values);

struct SpecInfo {
  std::string scheme;  // "plain", "ef", "ef21", "aq"; empty: not a valid spec
  std::string codec;   // first stage: "q4", "topk", "none", ...
  // From the codec's registry entry (compressors/codecs/codec.h, CodecPlotFacts):
  double bits = 0;         // q<b>: b; fp16/bf16: 16; sign: 1; none: 32; else NaN
  double k = 0;            // topk/randk: the fraction kept; else NaN
  bool reference = false;  // the uncompressed reference codec (none)
};
SpecInfo describe_spec(const std::string& spec);

// The run's link bandwidth in bits/s: net.bandwidth when set, else the bandwidth
// of net.preset; NaN when neither can be read.
double run_bandwidth_bps(const RunStats& run);

// One point of a summary plot: the mean and sample std over a seed group.
struct SummaryPoint {
  double x = 0;
  double y = 0, y_std = 0;      // y_std NaN for one seed
  double y_c = 0, y_c_std = 0;  // the compressed variant (NaN when absent)
  size_t n = 0;
};
struct SummaryLine {
  std::string legend;
  std::vector<SummaryPoint> points;  // sorted by x
};

// Lines of "final `metric` against the bits (dimension "bits") or the K
// (dimension "k") of the `direction` channel (compress.fw or compress.bw): one
// line per scheme ("aq"; against K with its sparsifier, "ef topk"; against
// bits with its codec unless a q<b> quantizer, "plain tah") and per value of
// the varying keys beside that channel, the seed and the network. Groups whose channel has no such
// value are left out; uncompressed runs (the reference codec, none) are returned in `reference`
// instead, one line of one point (x unused) per value of those other keys.
std::vector<SummaryLine> metric_lines(const std::vector<RunGroup>& groups,
                                      const std::vector<std::string>& keys,
                                      const std::string& direction, const std::string& dimension,
                                      const std::string& metric,
                                      std::vector<SummaryLine>& reference);

// Lines of simulated time to the target against bandwidth (x in bits/s), one
// per value of the varying keys other than net.* and the seed. Runs that never
// reached the target are left out of the mean; a point none reached is dropped
// and counted in `unreached`. `column`: the rule's seconds column
// (time_to_target_s, or eval_time_to_target_s; summary_target.h).
std::vector<SummaryLine> target_lines(const std::vector<RunGroup>& groups,
                                      const std::vector<std::string>& keys, size_t& unreached,
                                      const std::string& column = "time_to_target_s");

// One point of a Pareto figure: a seed group's final train loss (or the
// `y_column` given: the simulated time to a target) against `x_column`
// (wire_bytes or sim_time_s), mean and sample std over its seeds (std 0 for one
// seed; seeds that never reached a target are left out of the mean, as in the
// summary), labelled with run.label (the legend when empty). `loss` holds y.
struct ParetoPoint {
  std::string label;
  double x = 0, x_std = 0, loss = 0, loss_std = 0;
  size_t n = 0;
  bool front = false;  // on the Pareto front (summary_rank.h) of these points
};

// The points of the groups with a finite mean y and x; groups with a diverged
// run or without a value (a target none of its seeds reached) are left out and
// counted in `left_out`.
std::vector<ParetoPoint> pareto_points(const std::vector<RunGroup>& groups,
                                       const std::vector<std::string>& keys,
                                       const std::string& x_column, size_t& left_out,
                                       const std::string& y_column = "train_loss");

}  // namespace slowpipe::study
