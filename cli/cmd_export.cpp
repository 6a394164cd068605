// `slowpipe export RUN.h5 --table train|eval`: TSV on stdout for gnuplot and
// friends; `--label` prints the run's plot label; `--attrs` its root attributes
// (`status` as readers show it: a `running` log with a stale heartbeat says so).
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "runlog/export.h"
#include "runlog/runlog.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

int cmd_export(const Args& args) {
  po::options_description desc(
      "usage: slowpipe export RUN.h5 [--table train|eval|...] [--label] [--attrs] [--blob "
      "NAME]\n\nOptions");
  std::string path, table = "train";
  desc.add_options()("help,h", "this help")("run", po::value(&path), "run log (HDF5)")(
      "table,t", po::value(&table), "table to write as TSV (default train)")(
      "label", "print the run's plot label instead")("attrs", "print the root attributes instead")(
      "blob", po::value<std::string>(), "print a stored text blob (e.g. trace_step_100) instead");
  po::positional_options_description pos;
  pos.add("run", 1);
  const po::variables_map vm = parse_command_line(args, desc, pos);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (path.empty()) throw UsageError("no run log given (slowpipe export RUN.h5 --table train)");
  if (vm.count("label")) {
    std::cout << runlog::run_label(path) << "\n";
  } else if (vm.count("blob")) {
    std::cout << runlog::read_text(path, vm["blob"].as<std::string>());
  } else if (vm.count("attrs")) {
    // `status` as readers show it: a dead run's `running` says so (runlog/export.h).
    const std::string status = runlog::display_status(path);
    for (const auto& [k, v] : runlog::read_attributes(path))
      std::cout << k << "\t" << (k == "status" ? status : v) << "\n";
  } else {
    runlog::export_table(path, table, std::cout, std::cerr);
    const std::string status = runlog::display_status(path);
    if (status.rfind("running (", 0) == 0)
      std::cerr << "warning: run log " << path << ": " << status
                << ": the run most likely died; the table holds the rows it flushed\n";
  }
  return 0;
}

}  // namespace slowpipe::cli
