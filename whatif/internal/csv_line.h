// One CSV record of the clock's data files (clock_check.cpp, clock_layout.cpp):
// comma-separated fields, "..." quoting with "" for a quote, CR dropped.
#pragma once

#include <string>
#include <vector>

namespace slowpipe::whatif {

std::vector<std::string> split_csv(const std::string& line);

}  // namespace slowpipe::whatif
