// Point names, labels, resolution against the train options, point INIs and
// job commands (see sweep_points.h, docs/sweep.md).
#include "study/sweep_points.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "common/errors.h"
#include "common/options.h"
#include "config/preflight.h"
#include "config/train_config.h"
#include "study/key_names.h"

namespace slowpipe::study {
namespace {

namespace fs = std::filesystem;

// Output paths: plain strings that train resolves against its working
// directory; made absolute so a point's INI and job run from anywhere.
const char* const kOutputKeys[] = {"run.out", "run.save", "compress.aq_dir"};

// A train OptionSet bound to its config (the bindings hold references into
// `config`, so it never moves).
struct TrainOptions {
  config::TrainConfig config;
  OptionSet options;
  TrainOptions() { config::describe_options(config, options); }
  TrainOptions(const TrainOptions&) = delete;
  TrainOptions& operator=(const TrainOptions&) = delete;
};

bool is_path_key(const OptionSet& o, const std::string& key) {
  for (const auto& opt : o.options()) {
    if (opt.key == key) return opt.is_path;
  }
  return false;
}

bool is_output_key(const std::string& key) {
  return std::find(std::begin(kOutputKeys), std::end(kOutputKeys), key) != std::end(kOutputKeys);
}

std::string absolute_against(const std::string& value, const std::string& base) {
  if (value.empty() || fs::path(value).is_absolute()) return value;
  return (fs::path(base) / value).lexically_normal().string();
}

// The keys that enter names: run.label only when nothing else varies.
std::vector<std::string> name_keys(const std::vector<std::string>& varying) {
  std::vector<std::string> keys;
  for (const auto& k : varying) {
    if (k != "run.label") keys.push_back(k);
  }
  return keys.empty() ? varying : keys;
}

std::string safe_value(const std::string& value) {
  std::string out;
  for (const char c : value) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-';
    if (keep) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "empty" : out;
}

std::string hex8(const std::string& s) {
  uint32_t h = 2166136261u;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

// Applies the layers of every point but its own values and --set.
void apply_base(OptionSet& o, const SweepFile& sweep, const SweepSettings& settings) {
  for (const auto& f : sweep.configs) o.load_ini(f);
  o.load_ini_text(sweep.base_text, sweep.path, sweep.base_dir);
  for (const auto& f : settings.configs) o.load_ini(f);
}

std::string where(const SweepFile& s, const SweepKey& k) {
  return s.path + ":" + std::to_string(k.line) + ": ";
}

// Each [sweep] value alone, on a fresh option set: the error names the line.
// Returns the values with path values made absolute.
std::vector<SweepKey> checked_keys(const SweepFile& sweep) {
  std::vector<SweepKey> keys = sweep.keys;
  for (auto& k : keys) {
    if (k.key == "run.out") {
      throw UsageError(where(sweep, k) +
                       "run.out cannot be swept: the sweep names each run log "
                       "(<out dir>/<point name>.h5)");
    }
    for (auto& v : k.values) {
      TrainOptions scratch;
      if (is_path_key(scratch.options, k.key)) v = absolute_against(v, sweep.base_dir);
      try {
        scratch.options.set(k.key, v);
      } catch (const UsageError& e) {
        const bool list_like = v.find(',') != std::string::npos || v.find(' ') != std::string::npos;
        throw UsageError(where(sweep, k) + k.key + " = '" + v + "': " + e.what() +
                         (list_like ? " (values in [sweep] are separated by '|')" : ""));
      }
    }
  }
  return keys;
}

// --set KEY=VALUE with input paths made absolute; refuses swept keys.
std::vector<std::pair<std::string, std::string>> checked_sets(const SweepFile& sweep,
                                                              const SweepSettings& settings) {
  std::vector<std::pair<std::string, std::string>> sets;
  const std::string cwd = fs::current_path().string();
  for (const auto& a : settings.sets) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("bad --set '" + a + "': expected key=value");
    }
    const std::string key = trim(a.substr(0, eq));
    std::string value = trim(a.substr(eq + 1));
    for (const auto& k : sweep.keys) {
      if (k.key == key) {
        throw UsageError("--set " + key + ": " + where(sweep, k) +
                         "the sweep varies this key; change its list instead");
      }
    }
    if (key == "run.out") {
      throw UsageError("--set run.out: the sweep names each run log; use --out DIR for the folder");
    }
    TrainOptions scratch;
    if (is_path_key(scratch.options, key) || is_output_key(key))
      value = absolute_against(value, cwd);
    try {
      scratch.options.set(key, value);
    } catch (const UsageError& e) {
      throw UsageError("--set " + a + ": " + e.what());
    }
    sets.emplace_back(key, value);
  }
  return sets;
}

// Input files a point names must exist now, not when its run starts.
void check_inputs(const OptionSet& o) {
  for (const auto& opt : o.options()) {
    if (!opt.is_path) continue;
    const std::string v = opt.get();
    std::error_code ec;
    if (!v.empty() && !fs::exists(v, ec)) throw UsageError(opt.key + " = " + v + ": no such file");
  }
}

// --scale: an integer key times `scale`.
void scale_key(OptionSet& o, const std::string& key, int scale) {
  if (scale == 1) return;
  const std::string v = o.get(key);
  long long n = 0;
  try {
    size_t used = 0;
    n = std::stoll(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
  } catch (const std::exception&) {
    throw UsageError("--scale: " + key + " = '" + v + "' is not an integer");
  }
  o.set(key, std::to_string(n * scale));
}

}  // namespace

std::string default_sweep_dir(const std::string& name, int scale, bool reproduction) {
  return std::string(reproduction ? "results/reproduce/" : "results/") + name +
         (scale > 1 ? "-x" + std::to_string(scale) : "");
}

std::vector<std::string> varying_keys(const std::vector<SweepPoint>& points) {
  std::vector<std::string> out;
  if (points.empty()) return out;
  for (size_t i = 0; i < points[0].values.size(); ++i) {
    for (const auto& p : points) {
      if (p.values[i].second != points[0].values[i].second) {
        out.push_back(points[0].values[i].first);
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> point_names(const std::vector<SweepPoint>& points,
                                     const std::vector<std::string>& varying,
                                     const std::vector<std::string>& path_keys) {
  const std::vector<std::string> keys = name_keys(varying);
  const std::vector<std::string> shorts = short_key_names(keys);
  std::vector<std::string> names;
  std::set<std::string> used;
  for (const auto& p : points) {
    std::string name;
    for (size_t i = 0; i < keys.size(); ++i) {
      std::string v = p.value(keys[i]);
      if (std::find(path_keys.begin(), path_keys.end(), keys[i]) != path_keys.end()) {
        v = fs::path(v).filename().string();
      }
      name += (name.empty() ? "" : "_") + shorts[i] + "=" + safe_value(v);
    }
    if (name.empty()) name = "run";
    if (name.size() > 200) name = name.substr(0, 190) + "-" + hex8(name);
    std::string unique = name;
    for (int n = 2; used.count(unique) != 0; ++n) unique = name + "-" + std::to_string(n);
    used.insert(unique);
    names.push_back(unique);
  }
  return names;
}

std::string point_label(const SweepPoint& point, const std::vector<std::string>& varying) {
  const std::vector<std::string> keys = name_keys(varying);
  const std::vector<std::string> shorts = short_key_names(keys);
  std::string label;
  for (size_t i = 0; i < keys.size(); ++i) {
    label += (label.empty() ? "" : " ") + shorts[i] + "=" + point.value(keys[i]);
  }
  return label;
}

namespace {

// The keys whose values are paths (made absolute in each point's options).
std::vector<std::string> path_option_keys() {
  std::vector<std::string> path_keys;
  TrainOptions scratch;
  for (const auto& o : scratch.options.options()) {
    if (o.is_path) path_keys.push_back(o.key);
  }
  return path_keys;
}

// Point `i` of the sweep, named `name`: the base, its values, the sets and
// the scale applied, its outputs made absolute under the sweep's folder and
// its configuration checked as `slowpipe train` would.
ResolvedPoint resolve_point(const SweepFile& sweep, const SweepSettings& settings,
                            const std::vector<std::pair<std::string, std::string>>& sets,
                            const ResolvedSweep& out, const SweepPoint& point, size_t i,
                            const std::string& name, const std::string& cwd) {
  ResolvedPoint rp;
  rp.name = name;
  rp.point = point;
  rp.label = point_label(point, out.varying);
  auto t = std::make_unique<TrainOptions>();
  OptionSet& o = t->options;
  try {
    apply_base(o, sweep, settings);
    for (const auto& [k, v] : point.values) o.set(k, v);
    for (const auto& [k, v] : sets) o.set(k, v);
    for (const auto& k : settings.scale_keys) scale_key(o, k, settings.scale);
    o.set("run.out", out.out_dir_absolute + "/" + rp.name + ".h5");
    for (const char* k : kOutputKeys) o.set(k, absolute_against(o.get(k), cwd));
    if (o.get("run.label").empty()) {
      o.set("run.label", rp.label);
    } else {
      rp.label = o.get("run.label");
    }
    check_inputs(o);
    config::TrainConfig probe = t->config;
    probe.run.overwrite = true;  // the sweep decides what happens to an existing log
    config::check_config(probe, /*resuming=*/false);
  } catch (const UsageError& e) {
    std::string values;
    for (const auto& [k, v] : point.values) values += " " + k + "=" + v;
    throw UsageError("point " + std::to_string(i + 1) + " (" + rp.name + "):" + values + ": " +
                     e.what());
  }
  rp.resolved = o.resolved();
  rp.threads = std::max(1, t->config.run.threads);
  return rp;
}

}  // namespace

ResolvedSweep resolve_sweep(const SweepFile& sweep, const SweepSettings& settings) {
  const std::vector<SweepKey> keys = checked_keys(sweep);
  SweepFile checked = sweep;
  checked.keys = keys;
  const std::vector<SweepPoint> points = expand_points(checked);
  const auto sets = checked_sets(sweep, settings);
  {
    TrainOptions base;  // the base alone, so its errors are not blamed on a point
    apply_base(base.options, sweep, settings);
  }
  ResolvedSweep out;
  out.name = sweep.name;
  out.out_dir = settings.out_dir.empty()
                    ? default_sweep_dir(sweep.name, settings.scale, sweep.has_claim)
                    : settings.out_dir;
  out.scale = settings.scale;
  out.out_dir_absolute = fs::absolute(out.out_dir).lexically_normal().string();
  while (out.out_dir_absolute.size() > 1 && out.out_dir_absolute.back() == '/') {
    out.out_dir_absolute.pop_back();
  }
  out.varying = varying_keys(points);
  const std::vector<std::string> names = point_names(points, out.varying, path_option_keys());
  const std::string cwd = fs::current_path().string();
  for (size_t i = 0; i < points.size(); ++i) {
    out.points.push_back(resolve_point(sweep, settings, sets, out, points[i], i, names[i], cwd));
  }
  return out;
}

std::string point_log_path(const ResolvedSweep& s, const ResolvedPoint& p) {
  return s.out_dir_absolute + "/" + p.name + ".h5";
}
std::string point_output_path(const ResolvedSweep& s, const ResolvedPoint& p) {
  return s.out_dir_absolute + "/" + p.name + ".log";
}
std::string point_ini_path(const ResolvedSweep& s, const ResolvedPoint& p) {
  return s.out_dir_absolute + "/" + p.name + ".ini";
}

std::string point_ini_text(const ResolvedSweep& s, const ResolvedPoint& p,
                           std::vector<std::string>& extra_sets) {
  std::string text = "# slowpipe sweep " + s.name + ", point " + p.name +
                     ": its resolved configuration.\n# Rerun by hand: slowpipe train --config " +
                     point_ini_path(s, p) + " --set run.overwrite=true\n";
  extra_sets.clear();
  for (const auto& [k, v] : p.resolved) {
    if (v.find_first_of("#;\n") != std::string::npos) {
      text += "# " + k + ": its value holds '#' or ';', which INI cannot hold; pass --set\n";
      extra_sets.push_back(k + "=" + v);
      continue;
    }
    text += k + " = " + v + "\n";
  }
  return text;
}

std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string("@%_+=:,./-").find(c) != std::string::npos;
  });
  if (plain) return s;
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string job_command(const ResolvedSweep& s, const ResolvedPoint& p, const std::string& tool) {
  TrainOptions defaults;
  const Resolved def = defaults.options.resolved();
  std::string sets;
  for (const auto& [k, v] : p.resolved) {
    if (k == "run.progress") continue;
    const auto d =
        std::find_if(def.begin(), def.end(), [&k = k](const auto& kv) { return kv.first == k; });
    if (d != def.end() && d->second == v) continue;
    sets += " --set " + shell_quote(k + "=" + v);
  }
  const std::string env = "OMP_NUM_THREADS=" + std::to_string(p.threads) + " ";
  const std::string log = shell_quote(point_log_path(s, p));
  return "mkdir -p " + shell_quote(s.out_dir_absolute) + " && if [ -e " + log + " ]; then " + env +
         shell_quote(tool) + " train --resume " + log + " --set run.progress=plain; else " + env +
         shell_quote(tool) + " train" + sets + " --set run.progress=plain; fi >>" +
         shell_quote(point_output_path(s, p)) + " 2>&1";
}

}  // namespace slowpipe::study
