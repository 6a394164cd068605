// `slowpipe export`: a run log's table as TSV, and a short label for plots.
//
// The TSV is what gnuplot reads (experiments/plots/): one header line of column
// names, then one line per row (integers without decimals, NaN as "nan").
// The label names a run in a plot legend from its own root attributes, so a
// plot needs nothing but the HDF5 files. No libtorch here.
#pragma once

#include <map>
#include <ostream>
#include <string>

namespace slowpipe::runlog {

// Writes `table` of the run log at `h5_path` to `out` as TSV. UsageError for a
// missing or non-HDF5 file, or an unknown table (naming the tables present);
// DataError (naming what is wrong) for a damaged one, before anything is
// written. A column left out because a kill cut its creation short (a run that
// did not finish) is named in a line on `warnings`.
void export_table(const std::string& h5_path, const std::string& table, std::ostream& out,
                  std::ostream& warnings);

// `config.run.label` when set and non-empty; otherwise the parts that exist of
// "MODEL fw=SPEC bw=SPEC net=PRESET" (from config.model.name,
// config.compress.fw, config.compress.bw, config.net.preset); otherwise the
// file name without its extension.
std::string run_label(const std::string& h5_path);

// A `running` log whose `heartbeat` attribute (sim/internal/log_tables.h) is older than
// this, and than 3 x the longest step_time_s it logged, belongs to a run that
// most likely died without a word (SIGKILL, its host gone, rank 0 of a
// distributed run killed). SLOWPIPE_HEARTBEAT_STALE_S overrides it (tests).
constexpr double kHeartbeatStale_s = 60;

// The status a reader shows: the `status` attribute ("unknown" when absent),
// and for a `running` log with a stale heartbeat "running (no heartbeat since
// 2026-11-25T21:50:03Z, 75 s ago)". `now_unix_s`: the time to measure the
// age against. docs/hdf5-schema.md.
std::string display_status(const std::map<std::string, std::string>& attrs, double longest_step_s,
                           double now_unix_s);
// The same for the log at `h5_path`, now (reads its attributes and train table).
std::string display_status(const std::string& h5_path);

}  // namespace slowpipe::runlog
