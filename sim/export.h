// `slowpipe export`: a run log's table as TSV, and a short label for plots.
//
// The TSV is what gnuplot reads (experiments/plots/): one header line of column
// names, then one line per row (integers without decimals, NaN as "nan").
// The label names a run in a plot legend from its own root attributes, so a
// plot needs nothing but the HDF5 files. No libtorch here.
#pragma once

#include <ostream>
#include <string>

namespace slowpipe::sim {

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

}  // namespace slowpipe::sim
