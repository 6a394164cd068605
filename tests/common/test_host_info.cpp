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

TEST_CASE("cpu_has_flag reads /proc/cpuinfo's flags; the dtype note follows them", "[host_info]") {
  std::ifstream in("/proc/cpuinfo");
  std::string flags;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  }
  const bool fpu = flags.find(" fpu ") != std::string::npos;
  CHECK(slowpipe::cpu_has_flag("fpu") == fpu);
  CHECK_FALSE(slowpipe::cpu_has_flag("no_such_flag_anywhere"));
  CHECK_FALSE(slowpipe::cpu_has_flag("fp"));  // a whole flag, not a prefix of "fpu"
  CHECK(slowpipe::describe_compute_dtype("fp32", "cpu").rfind("fp32", 0) == 0);
  CHECK(slowpipe::describe_compute_dtype("bf16", "cuda:0").find("tensor cores") !=
        std::string::npos);
  const bool native = slowpipe::cpu_has_flag("avx512_bf16") || slowpipe::cpu_has_flag("amx_bf16");
  const std::string cpu = slowpipe::describe_compute_dtype("bf16", "cpu");
  CHECK((cpu.find("without bf16 instructions") != std::string::npos) == !native);
}
