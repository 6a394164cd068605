// `slowpipe netsim SCENARIO.json`: a generic network scenario (hosts, links,
// routes, flows) under max-min fair sharing, a thin CLI layer over
// netmodel/netsim.h (torch-free, run by the light front). The what-if step
// time, `slowpipe timing`, is in cmd_timing.cpp.
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "common/large_heap.h"
#include "netmodel/netsim.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

int cmd_netsim(const Args& args) {
  po::options_description desc(
      "usage: slowpipe netsim SCENARIO.json\n\n"
      "Reads hosts, links, routes and flows, simulates max-min fair sharing, and\n"
      "prints each flow's start and completion time. Options");
  std::string path;
  desc.add_options()("help,h", "this help")("scenario", po::value(&path), "scenario JSON file");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  const po::variables_map vm = parse_command_line(args, desc, pos);
  if (vm.count("help")) {
    std::cout << desc
              << "\nThe scenario format is described in docs/netmodel.md; examples are in "
                 "experiments/netsim/.\n";
    return 0;
  }
  if (path.empty()) throw UsageError("no scenario given (slowpipe netsim SCENARIO.json)");
  // The text, its parse and the scenario, the results and the table take
  // about 8 bytes per byte of JSON: grow the heap once for them (a file that
  // cannot be sized is left to load_scenario's messages).
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes <= netmodel::kMaxScenarioBytes) prepare_large_heap(8 * bytes);
  netmodel::run_netsim(path, std::cout);
  return 0;
}

}  // namespace slowpipe::cli
