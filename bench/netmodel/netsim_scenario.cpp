// Writes one of bench_netmodel's scaling cases (scenario_gen.h, scale_case)
// as a `slowpipe netsim` JSON file, so that the whole command can be timed on
// the benchmark's scenario (bench/host-check.sh).
//   netsim_scenario FLOWS OUT.json     (FLOWS in 1..1000000)
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "bench/netmodel/scenario_gen.h"

int main(int argc, char** argv) {
  const auto usage = [] {
    std::cerr << "usage: netsim_scenario FLOWS OUT.json (FLOWS a count in 1..1000000)\n";
    return 2;
  };
  if (argc != 3) return usage();
  const std::string count = argv[1];
  if (count.empty() || count.size() > 7 ||
      count.find_first_not_of("0123456789") != std::string::npos)
    return usage();
  const int flows = std::stoi(count);
  if (flows < 1 || flows > 1000000) return usage();
  std::ofstream out(argv[2]);
  if (!out) {
    std::cerr << "netsim_scenario: cannot write '" << argv[2] << "'\n";
    return 1;
  }
  slowpipe::bench::write_scenario_json(
      slowpipe::bench::generate_scenario(slowpipe::bench::scale_case(flows)).scenario, out);
  out.close();
  if (!out) {
    std::cerr << "netsim_scenario: writing '" << argv[2] << "' failed\n";
    return 1;
  }
  return 0;
}
