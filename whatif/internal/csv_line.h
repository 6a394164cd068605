// One CSV record of the clock's data files (clock_check.cpp, clock_layout.cpp):
// comma-separated fields, "..." quoting with "" for a quote, CR dropped.
#pragma once

#include <fstream>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace slowpipe::whatif {

std::vector<std::string> split_csv(const std::string& line);

// A data file's header: its column indices by name and its field count.
struct CsvHeader {
  std::map<std::string, size_t> columns;
  size_t fields = 0;
};
// Opens `path` into `in` and reads its header line, which must name every
// column of `need`. DataError naming the file (`what`: "the published set").
CsvHeader open_csv(std::ifstream& in, const std::string& path, const std::string& what,
                   std::initializer_list<const char*> need);

}  // namespace slowpipe::whatif
