// Legends, spec facts and the points of the summary plots (see plot_series.h).
#include "study/summary/internal/plot_series.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "common/errors.h"
#include "common/numbers.h"
#include "common/units.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/codec.h"
#include "compressors/codecs/spec.h"
#include "netmodel/net_config.h"
#include "study/summary/key_names.h"
#include "study/summary/summary_rank.h"

namespace slowpipe::study {
namespace {

std::string config_value(const RunStats& run, const std::string& key) {
  auto it = run.config.find(key);
  return it == run.config.end() ? std::string() : it->second;
}

// "k=v" for the varying keys that are not `skip`ped, joined by spaces.
std::string other_keys(const RunGroup& group, const std::vector<std::string>& keys,
                       bool (*skip)(const std::string&, const std::string&),
                       const std::string& direction) {
  std::string out;
  for (const auto& key : keys) {
    if (skip(key, direction)) continue;
    out += (out.empty() ? "" : " ") + short_key_name(key, keys) + "=" + group_key_value(group, key);
  }
  return out;
}

bool is_network_key(const std::string& key) {
  return key.rfind("net.", 0) == 0;
}

// Pooled points: all runs of every group that falls on the same (line, x).
struct Pool {
  std::vector<double> y, y_c;
};

std::vector<SummaryLine> to_lines(const std::map<std::string, std::map<double, Pool>>& pools) {
  std::vector<SummaryLine> lines;
  for (const auto& [legend, by_x] : pools) {
    SummaryLine line{legend, {}};
    for (const auto& [x, pool] : by_x) {
      const MeanStd m = mean_std(pool.y), c = mean_std(pool.y_c);
      if (m.n == 0) continue;
      line.points.push_back({x, m.mean, m.std, c.n ? c.mean : kNaN, c.std, m.n});
    }
    if (!line.points.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

double value_of(const RunStats& run, const std::string& id) {
  auto it = run.values.find(id);
  return it == run.values.end() ? kNaN : it->second;
}

}  // namespace

std::string legend_of(const RunGroup& group, const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& key : keys) {
    out += (out.empty() ? "" : " ") + short_key_name(key, keys) + "=" + group_key_value(group, key);
  }
  if (!out.empty()) return out;
  const std::string& path = group.runs.front()->path;
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0
             ? name.substr(0, name.size() - 3)
             : name;
}

std::string group_label(const RunGroup& group) {
  std::string label = config_value(*group.runs.front(), "run.label");
  for (const RunStats* run : group.runs) {
    if (config_value(*run, "run.label") != label) return "";
  }
  return label;
}

std::vector<std::string> group_legends(const std::vector<RunGroup>& groups,
                                       const std::vector<std::string>& keys) {
  std::vector<std::string> labels, legends;
  std::map<std::string, std::set<std::string>> legends_of_label;
  for (const auto& group : groups) {
    labels.push_back(group_label(group));
    legends.push_back(legend_of(group, keys));
    if (!labels.back().empty()) legends_of_label[labels.back()].insert(legends.back());
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    if (labels[g].empty()) continue;
    legends[g] =
        legends_of_label[labels[g]].size() > 1 ? labels[g] + " (" + legends[g] + ")" : labels[g];
  }
  return legends;
}

std::string runs_setting(const std::vector<const RunStats*>& runs) {
  std::set<std::string> workloads, networks;
  for (const RunStats* p : runs) {
    const RunStats& run = *p;
    const std::string model = config_value(run, "model.name");
    const std::string data = config_value(run, "data.name");
    const bool tuned = !config_value(run, "model.init_from").empty();
    std::string workload = model;
    if (!data.empty())
      workload += (model.empty() ? "" : " ") + std::string(tuned ? "fine-tuned on " : "on ") + data;
    workloads.insert(workload);
    std::string net = config_value(run, "net.bandwidth");
    if (net.empty() || net == "preset") net = config_value(run, "net.preset");
    networks.insert(net);
  }
  std::string out;
  if (workloads.size() > 1) out = "several workloads";
  if (workloads.size() == 1) out = *workloads.begin();
  std::string net = networks.size() > 1 ? "several networks" : "";
  if (networks.size() == 1 && !networks.begin()->empty()) net = "net " + *networks.begin();
  if (!net.empty()) out += (out.empty() ? "" : ", ") + net;
  return out;
}

std::vector<BandPoint> seed_band(const std::vector<SeedCurve>& seeds) {
  struct Acc {
    double sum = 0, min = 0, max = 0, x_sum = 0;
    size_t n = 0, x_n = 0;
  };
  std::map<double, Acc> by_key;
  for (const SeedCurve& seed : seeds) {
    std::map<double, std::pair<double, double>> last;  // key -> (x, y), the last row wins
    for (size_t i = 0; i < seed.key.size() && i < seed.y.size(); ++i) {
      last[seed.key[i]] = {i < seed.x.size() ? seed.x[i] : kNaN, seed.y[i]};
    }
    for (const auto& [key, xy] : last) {
      if (!std::isfinite(xy.second) || std::isnan(key)) continue;
      Acc& a = by_key[key];
      a.min = a.n ? std::min(a.min, xy.second) : xy.second;
      a.max = a.n ? std::max(a.max, xy.second) : xy.second;
      a.sum += xy.second, ++a.n;
      if (std::isfinite(xy.first)) a.x_sum += xy.first, ++a.x_n;
    }
  }
  std::vector<BandPoint> out;
  out.reserve(by_key.size());
  for (const auto& [key, a] : by_key) {
    out.push_back({key, a.x_n ? a.x_sum / static_cast<double>(a.x_n) : kNaN,
                   a.sum / static_cast<double>(a.n), a.min, a.max, a.n});
  }
  return out;
}

SeedCurve epoch_means(const std::vector<double>& epoch, const std::vector<double>& values) {
  std::map<double, std::pair<double, size_t>> sums;  // epoch -> (sum, count of finite values)
  for (size_t i = 0; i < epoch.size() && i < values.size(); ++i) {
    if (!std::isfinite(epoch[i])) continue;
    auto& [sum, n] = sums[epoch[i]];
    if (std::isfinite(values[i])) sum += values[i], ++n;
  }
  SeedCurve out;
  for (const auto& [e, s] : sums) {
    out.key.push_back(e);
    out.x.push_back(kNaN);
    out.y.push_back(s.second ? s.first / static_cast<double>(s.second) : kNaN);
  }
  return out;
}

SpecInfo describe_spec(const std::string& spec) {
  SpecInfo info{"", "", kNaN, kNaN};
  compressors::SpecTree tree;
  try {
    tree = compressors::parse_spec(spec);
  } catch (const UsageError&) {
    return info;
  }
  if (tree.stages.empty()) return info;
  info.scheme = compressors::scheme_plot_label(tree.scheme);
  const compressors::SpecStage& stage = tree.stages.front();
  info.codec = stage.name;
  const compressors::CodecPlotFacts facts = compressors::plot_facts(stage);
  info.bits = facts.bits;
  info.k = facts.keep_fraction;
  const compressors::CodecInfo* codec = compressors::codec_registry().find(stage.name);
  info.reference = codec && codec->reference;
  return info;
}

double run_bandwidth_bps(const RunStats& run) {
  try {
    const std::string bandwidth = config_value(run, "net.bandwidth");
    if (!bandwidth.empty() && bandwidth != "preset") {
      return parse_bandwidth_bps("net.bandwidth", bandwidth);
    }
    const std::string preset = config_value(run, "net.preset");
    if (preset.empty()) return kNaN;
    return netmodel::find_net_preset(preset).bandwidth_bps;
  } catch (const UsageError&) {
    return kNaN;
  }
}

std::vector<SummaryLine> metric_lines(const std::vector<RunGroup>& groups,
                                      const std::vector<std::string>& keys,
                                      const std::string& direction, const std::string& dimension,
                                      const std::string& metric,
                                      std::vector<SummaryLine>& reference) {
  auto skip = [](const std::string& key, const std::string& dir) {
    return key == dir || key == "run.seed" || is_network_key(key);
  };
  std::map<std::string, std::map<double, Pool>> pools, reference_pools;
  for (const auto& group : groups) {
    const SpecInfo spec = describe_spec(config_value(*group.runs.front(), direction));
    const std::string others = other_keys(group, keys, skip, direction);
    const bool uncompressed = spec.reference;
    const double x = dimension == "bits" ? spec.bits : spec.k;
    if (!uncompressed && std::isnan(x)) continue;
    if (!uncompressed && dimension == "bits" && spec.bits >= 32) continue;
    std::string legend = uncompressed ? "fp32 (" + spec.codec + ")" : spec.scheme;
    // Against K the sparsifier names the line; against bits every codec but the
    // q<b> quantizers does (tah, fp16), so a TAH-Quant 3-bit run is not pooled with q3.
    const bool quantizer = spec.codec.size() > 1 && spec.codec[0] == 'q' &&
                           std::isdigit(static_cast<unsigned char>(spec.codec[1]));
    if (!uncompressed && (dimension == "k" || !quantizer)) legend += " " + spec.codec;
    if (!others.empty()) legend += " " + others;
    Pool& pool = uncompressed ? reference_pools[legend][0] : pools[legend][x];
    for (const RunStats* run : group.runs) {
      pool.y.push_back(value_of(*run, metric));
      pool.y_c.push_back(value_of(*run, metric + "_compressed"));
    }
  }
  reference = to_lines(reference_pools);
  return to_lines(pools);
}

std::vector<SummaryLine> target_lines(const std::vector<RunGroup>& groups,
                                      const std::vector<std::string>& keys, size_t& unreached,
                                      const std::string& column) {
  auto skip = [](const std::string& key, const std::string&) {
    return key == "run.seed" || is_network_key(key);
  };
  std::map<std::string, std::map<double, Pool>> pools;
  for (const auto& group : groups) {
    const double x = run_bandwidth_bps(*group.runs.front());
    if (!std::isfinite(x)) continue;
    std::string legend = other_keys(group, keys, skip, "");
    if (legend.empty()) legend = "time to target";
    Pool& pool = pools[legend][x];
    for (const RunStats* run : group.runs) pool.y.push_back(value_of(*run, column));
  }
  unreached = 0;
  for (const auto& [legend, by_x] : pools) {
    for (const auto& [x, pool] : by_x) unreached += mean_std(pool.y).n == 0;
  }
  return to_lines(pools);
}

std::vector<ParetoPoint> pareto_points(const std::vector<RunGroup>& groups,
                                       const std::vector<std::string>& keys,
                                       const std::string& x_column, size_t& left_out,
                                       const std::string& y_column) {
  std::vector<ParetoPoint> points;
  left_out = 0;
  for (const auto& group : groups) {
    const GroupCell x = aggregate(group, x_column), loss = aggregate(group, y_column);
    if (group_diverged(group) || x.stat.n == 0 || loss.stat.n == 0) {
      ++left_out;
      continue;
    }
    ParetoPoint p;
    p.label = group_label(group);
    if (p.label.empty()) p.label = legend_of(group, keys);
    std::replace(p.label.begin(), p.label.end(), '\t', ' ');
    p.x = x.stat.mean;
    p.x_std = x.stat.n > 1 ? x.stat.std : 0;
    p.loss = loss.stat.mean;
    p.loss_std = loss.stat.n > 1 ? loss.stat.std : 0;
    p.n = loss.stat.n;
    points.push_back(std::move(p));
  }
  std::vector<double> xs, ys;
  for (const auto& p : points) xs.push_back(p.x), ys.push_back(p.loss);
  const std::vector<bool> front = pareto_front(xs, ys);
  for (size_t i = 0; i < points.size(); ++i) points[i].front = front[i];
  return points;
}

}  // namespace slowpipe::study
