// runlog_tool: a stand-in for the two `slowpipe export` forms that
// scripts/plot.sh calls, so the plot script is tested without the simulator:
//   runlog_tool export RUN.h5 --table T   TSV of table T on stdout
//   runlog_tool export RUN.h5 --label     the run's plot label
// Errors print one line and exit 2 (UsageError) or 3 (DataError), like the CLI.
#include <iostream>
#include <string>

#include "common/errors.h"
#include "sim/export.h"

int main(int argc, char** argv) {
  const std::string usage = "usage: runlog_tool export RUN.h5 (--table T | --label)";
  try {
    if (argc < 4 || std::string(argv[1]) != "export") throw slowpipe::UsageError(usage);
    const std::string path = argv[2];
    const std::string flag = argv[3];
    if (flag == "--label" && argc == 4) {
      std::cout << slowpipe::sim::run_label(path) << "\n";
    } else if (flag == "--table" && argc == 5) {
      slowpipe::sim::export_table(path, argv[4], std::cout);
    } else {
      throw slowpipe::UsageError(usage);
    }
    return 0;
  } catch (const slowpipe::UsageError& e) {
    std::cerr << "runlog_tool: " << e.what() << "\n";
    return 2;
  } catch (const slowpipe::DataError& e) {
    std::cerr << "runlog_tool: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "runlog_tool: " << e.what() << "\n";
    return 1;
  }
}
