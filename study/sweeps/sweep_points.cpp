// Point names, labels, resolution against the train options, point INIs and
// job commands (see sweep_points.h, docs/sweep.md).
#include "study/sweeps/sweep_points.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "common/errors.h"
#include "common/options.h"
#include "compressors/codecs/channel_spec.h"
#include "config/preflight.h"
#include "config/train_config.h"
#include "study/summary/key_names.h"

namespace slowpipe::study {
namespace {

namespace fs = std::filesystem;

// Output paths: plain strings that train resolves against its working
// directory. Resolved absolute (and checked so), then those inside the sweep's
// folder are written relative to it: the points run in that folder, so a copy
// of the folder writes into the copy.
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

// Absolute output paths inside `dir`, made relative to it.
void relative_outputs(Resolved& resolved, const std::string& dir) {
  for (auto& [k, v] : resolved) {
    if (!is_output_key(k) || v.empty()) continue;
    const fs::path rel = fs::path(v).lexically_relative(dir);
    if (!rel.empty() && *rel.begin() != "..") v = rel.string();
  }
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

// The keys whose values are channel specs: two spellings can mean one run.
bool is_spec_key(const std::string& key) {
  return key == "compress.fw" || key == "compress.bw" || key == "compress.grad";
}

// What spec key `key`, just set on `t`, means: its canonical form (q4:nearest
// is q4).
std::string canonical_spec_value(const TrainOptions& t, const std::string& key) {
  const compressors::CompressConfig& c = t.config.compress;
  if (key == "compress.fw") return compressors::canonical_spec(c.fw);
  if (key == "compress.bw") return compressors::canonical_spec(c.bw);
  return compressors::canonical_spec(c.grad.given());
}

std::string where(const SweepFile& s, const SweepKey& k) {
  return s.path + ":" + std::to_string(k.line) + ": ";
}

// Each [sweep] value alone, on a fresh option set: the error names the line.
// Returns the values with path values made absolute, and the canonical form of
// spec values (SweepKey::canonical).
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
      if (is_spec_key(k.key)) k.canonical.push_back(canonical_spec_value(scratch, k.key));
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
    config::preflight(probe, /*resuming=*/false);
  } catch (const UsageError& e) {
    std::string values;
    for (const auto& [k, v] : point.values) values += " " + k + "=" + v;
    throw UsageError("point " + std::to_string(i + 1) + " (" + rp.name + "):" + values + ": " +
                     e.what());
  }
  rp.resolved = o.resolved();
  relative_outputs(rp.resolved, out.out_dir_absolute);
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
  out.sweep_path = fs::absolute(sweep.path).lexically_normal().string();
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
                     ": its resolved configuration.\n"
                     "# Input paths are absolute; output paths are relative to this file's "
                     "folder, where the\n# sweep runs the point. Rerun it by hand from this "
                     "folder:\n#   slowpipe train --config " +
                     p.name +
                     ".ini --set run.overwrite=true\n# or through its sweep: slowpipe "
                     "sweep " +
                     s.sweep_path + " --point " + p.name + " --out <this folder>\n";
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

namespace {

// "\n  K  NAME" for the first points, for messages that list what exists.
std::string listed_points(const ResolvedSweep& s) {
  constexpr size_t kShown = 20;
  std::string out;
  for (size_t i = 0; i < s.points.size() && i < kShown; ++i) {
    out += "\n  " + std::to_string(i + 1) + "  " + s.points[i].name;
  }
  if (s.points.size() > kShown) {
    out += "\n  ... and " + std::to_string(s.points.size() - kShown) +
           " more (slowpipe sweep FILE --dry-run lists them all)";
  }
  return out;
}

// --point K (1-based) or NAME.
size_t point_index(const ResolvedSweep& s, const std::string& arg) {
  const std::string n = std::to_string(s.points.size());
  if (!arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos) {
    const size_t k = arg.size() > 9 ? 0 : std::stoul(arg);
    if (k >= 1 && k <= s.points.size()) return k - 1;
    throw UsageError("--point " + arg + ": the sweep has " + n + " points, numbered 1 to " + n +
                     ":" + listed_points(s));
  }
  for (size_t i = 0; i < s.points.size(); ++i) {
    if (s.points[i].name == arg) return i;
  }
  throw UsageError("--point " + arg +
                   ": no point has that name (give a name or a number):" + listed_points(s));
}

struct OnlyTerm {
  std::string key;  // in full
  std::string value;
};

// The --only arguments as terms. A ',' separates terms only where what
// follows is KEY=... with KEY a listed key: values (channel specs) may hold ','.
std::vector<OnlyTerm> only_terms(const std::vector<std::string>& args,
                                 const std::vector<std::string>& keys) {
  const std::vector<std::string> shorts = short_key_names(keys);
  const auto full_key = [&](const std::string& k) -> std::string {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (k == keys[i] || k == shorts[i]) return keys[i];
    }
    return "";
  };
  std::string known;
  for (size_t i = 0; i < keys.size(); ++i)
    known += (i ? ", " : "") + keys[i] + " (" + shorts[i] + ")";
  std::vector<OnlyTerm> terms;
  for (const auto& arg : args) {
    const size_t first = terms.size();  // this argument's first term
    size_t start = 0;
    for (;;) {
      const size_t comma = arg.find(',', start);
      const std::string piece =
          arg.substr(start, comma == std::string::npos ? comma : comma - start);
      const size_t eq = piece.find('=');
      const std::string key = eq == std::string::npos ? "" : full_key(trim(piece.substr(0, eq)));
      if (!key.empty()) {
        terms.push_back({key, trim(piece.substr(eq + 1))});
      } else if (terms.size() > first) {
        terms.back().value += "," + piece;
      } else {
        throw UsageError("--only " + arg +
                         ": expected KEY=VALUE[,KEY=VALUE...] with KEY a key the "
                         "sweep lists: " +
                         known);
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return terms;
}

// A point's value `v` matches `want` as written, or, for a path (made
// absolute), `want` resolved against the sweep file's folder.
bool value_matches(const std::string& v, const std::string& want, const std::string& sweep_dir) {
  return v == want || (fs::path(v).is_absolute() && absolute_against(want, sweep_dir) == v);
}

// No point takes `t`'s value: UsageError listing the values its key takes.
void check_term_value(const ResolvedSweep& s, const OnlyTerm& t, const std::string& sweep_dir) {
  std::vector<std::string> taken;
  for (const auto& p : s.points) {
    const std::string& v = p.point.value(t.key);
    if (value_matches(v, t.value, sweep_dir)) return;
    if (std::find(taken.begin(), taken.end(), v) == taken.end()) taken.push_back(v);
  }
  std::string values;
  for (const auto& v : taken) values += (values.empty() ? "" : " | ") + v;
  throw UsageError("--only " + t.key + "=" + t.value + ": no point has this value; " + t.key +
                   " takes " + values);
}

// Terms on one key are alternatives; every key named must match.
bool point_matches(const SweepPoint& p, const std::vector<OnlyTerm>& terms,
                   const std::string& sweep_dir) {
  for (const auto& t : terms) {
    const bool any = std::any_of(terms.begin(), terms.end(), [&](const OnlyTerm& u) {
      return u.key == t.key && value_matches(p.value(u.key), u.value, sweep_dir);
    });
    if (!any) return false;
  }
  return true;
}

}  // namespace

std::vector<size_t> select_points(const ResolvedSweep& s, const PointSelector& sel) {
  std::vector<bool> picked(s.points.size(), sel.points.empty());
  for (const auto& a : sel.points) picked[point_index(s, a)] = true;
  if (!sel.only.empty() && !s.points.empty()) {
    std::vector<std::string> keys;
    for (const auto& kv : s.points[0].point.values) keys.push_back(kv.first);
    const std::vector<OnlyTerm> terms = only_terms(sel.only, keys);
    const std::string dir = fs::path(s.sweep_path).parent_path().string();
    for (const auto& t : terms) check_term_value(s, t, dir);
    for (size_t i = 0; i < s.points.size(); ++i) {
      picked[i] = picked[i] && point_matches(s.points[i].point, terms, dir);
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < picked.size(); ++i) {
    if (picked[i]) out.push_back(i);
  }
  if (out.empty()) {
    std::string asked;
    for (const auto& a : sel.points) asked += " --point " + a;
    for (const auto& a : sel.only) asked += " --only " + a;
    throw UsageError(
        "no point of the sweep matches" + asked +
        " (its exclude/only may have dropped that combination); the points:" + listed_points(s));
  }
  return out;
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
  return "mkdir -p " + shell_quote(s.out_dir_absolute) + " && cd " +
         shell_quote(s.out_dir_absolute) + " && if [ -e " + log + " ]; then " + env +
         shell_quote(tool) + " train --resume " + log + " --set run.progress=plain; else " + env +
         shell_quote(tool) + " train" + sets + " --set run.progress=plain; fi >>" +
         shell_quote(point_output_path(s, p)) + " 2>&1";
}

}  // namespace slowpipe::study
