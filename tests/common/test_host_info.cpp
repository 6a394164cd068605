// common/host_info.h: the CPU model name as /proc/cpuinfo's first "model name"
// line gives it (read here with a different parser), and a host name.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <string>

#include "common/host_info.h"

TEST_CASE("cpu_model_name is the first model name of /proc/cpuinfo", "[host_info]") {
  std::ifstream in("/proc/cpuinfo");
  std::string expected = "unknown";
  const std::regex model(R"(^model name\s*:\s(.*)$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, model)) {
      expected = m[1];
      break;
    }
  }
  const std::string got = slowpipe::cpu_model_name();
  CHECK(got == expected);
  CHECK(got.find('\n') == std::string::npos);
  CHECK_FALSE(got.empty());
}

TEST_CASE("host_name is a name without NUL or newline", "[host_info]") {
  const std::string h = slowpipe::host_name();
  CHECK_FALSE(h.empty());
  CHECK(h.find('\n') == std::string::npos);
  CHECK(h.find('\0') == std::string::npos);
}
