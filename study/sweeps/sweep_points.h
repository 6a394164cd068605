// From a sweep file's points to runnable training runs: each point's name and
// plot label, its full resolved configuration (the same OptionSet `slowpipe
// train` uses, so a value train would refuse is refused here, before anything
// runs, and config::preflight without the libtorch checks (run.device and the
// model checks, which wait for the point's run)),
// the INI written beside its run log, the self-contained shell command
// --emit-jobs writes for it, and the points --point / --only select. No
// libtorch here.
//
// Configuration layers, later wins: the sweep's `config =` files, the sweep
// file's own sections, --config files, the point's [sweep] values, --set.
// Input paths (keys of type path) are made absolute: from INI files against
// the file's folder (as train does), from [sweep] against the sweep file's
// folder, from --set against the working directory. Output paths (run.out,
// run.save, compress.aq_dir) are made absolute against the working directory
// and checked so; those inside the sweep's folder (run.out always) are then
// kept relative to that folder, where the points run: a copied folder writes
// into the copy, never into the original.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "study/sweeps/sweep_file.h"

namespace slowpipe::study {

using Resolved = std::vector<std::pair<std::string, std::string>>;

// What the command line adds to a sweep file.
struct SweepSettings {
  std::vector<std::string> configs;  // --config FILE...
  std::vector<std::string> sets;     // --set KEY=VALUE...
  std::string out_dir;               // --out DIR; empty: default_sweep_dir()
  // --scale K: every point's value of each of these integer keys times K (a
  // reproduction's [claim] names them: docs/reproduce.md).
  int scale = 1;
  std::vector<std::string> scale_keys;
};

// results/<name>, or results/reproduce/<name> for a reproduction (a sweep
// file with a [claim]); with "-x<K>" appended for --scale K > 1.
std::string default_sweep_dir(const std::string& name, int scale, bool reproduction);

struct ResolvedPoint {
  std::string name;   // file-system safe, unique in the sweep: the run log's stem
  std::string label;  // for plots (run.label)
  SweepPoint point;
  Resolved resolved;  // every train key, as `slowpipe train` would log it (run in out_dir)
  int threads = 1;    // run.threads
};

struct ResolvedSweep {
  std::string name;
  std::string out_dir;               // as given or defaulted (for messages)
  std::string out_dir_absolute;      // what children and INIs use
  std::vector<std::string> varying;  // keys whose value differs between points
  std::vector<ResolvedPoint> points;
  std::string sweep_path;  // the sweep file, absolute
  // A reproduction (a [claim] section): its summary.md is `slowpipe verdict`'s
  // report instead of the plain summary, and its plots get the claim's target.
  bool has_claim = false;
  int scale = 1;
  bool has_target = false;
  double target = 0;
};

// Names of the points, built from the keys that vary between them
// (`fw=aq-q2_net=100Mbps_seed=1`): short key names (the key's last part; the
// section for `*.preset`, `*.name`, `*.path`; the whole key where two would
// clash), values with every character outside [A-Za-z0-9.+-] turned into '-';
// run.label is left out when another key varies. Names that clash after this
// get "-2", "-3", ... in point order. `path_keys` name keys whose values are
// paths (only the file name enters the name).
std::vector<std::string> point_names(const std::vector<SweepPoint>& points,
                                     const std::vector<std::string>& varying,
                                     const std::vector<std::string>& path_keys = {});
// "fw=aq(q2) net=100Mbps seed=1": the same keys, values as written.
std::string point_label(const SweepPoint& point, const std::vector<std::string>& varying);
// The keys whose values differ between `points`, in sweep order.
std::vector<std::string> varying_keys(const std::vector<SweepPoint>& points);

// Resolves every point: UsageError naming the sweep file, line and key for an
// unknown key or a bad value, the point for a configuration train would refuse
// (config::preflight, missing input files), and --set for a key the sweep varies.
ResolvedSweep resolve_sweep(const SweepFile& sweep, const SweepSettings& settings);

// The run log and output file of a point.
std::string point_log_path(const ResolvedSweep& s, const ResolvedPoint& p);     // .h5
std::string point_output_path(const ResolvedSweep& s, const ResolvedPoint& p);  // .log
std::string point_ini_path(const ResolvedSweep& s, const ResolvedPoint& p);     // .ini

// The INI holding a point's resolved configuration (`slowpipe train --config`
// reruns it). Values INI cannot hold (with '#' or ';') are left out of the text
// and returned in `extra_sets` as KEY=VALUE, to be passed with --set.
std::string point_ini_text(const ResolvedSweep& s, const ResolvedPoint& p,
                           std::vector<std::string>& extra_sets);

// --point and --only: the points to run in the foreground, list or emit.
struct PointSelector {
  std::vector<std::string> points;  // --point K (1-based, as --dry-run numbers them) or NAME
  std::vector<std::string> only;    // --only KEY=VALUE[,KEY=VALUE...]
  bool empty() const { return points.empty() && only.empty(); }
};

// The indices into s.points that `sel` picks, in sweep order (all of them
// when `sel` is empty): the points --point names, or every point without
// --point, that match the --only terms. A term's KEY is a key listed in
// [sweep], in full or by its short name (fw for compress.fw), its VALUE one of
// the key's values as written; terms on one key are alternatives, terms on
// different keys must all hold. ',' separates terms only before another KEY=
// (channel specs hold ','). UsageError, listing what exists, for an index out
// of range, an unknown name or key, a value no point takes, or no match.
std::vector<size_t> select_points(const ResolvedSweep& s, const PointSelector& sel);

// Quotes `s` for a POSIX shell (single quotes unless it is plainly safe).
std::string shell_quote(const std::string& s);
// One line of --emit-jobs: a shell command that needs nothing but `tool`
// (absolute) and the point's input files. It enters the sweep's folder
// (creating it), resumes the point's run log when
// one exists (`train --resume`: a complete run is left alone) and otherwise
// starts the run with every key that differs from train's defaults as --set,
// output appended to the point's .log.
std::string job_command(const ResolvedSweep& s, const ResolvedPoint& p, const std::string& tool);

}  // namespace slowpipe::study
