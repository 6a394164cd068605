// The machine's CPU model name and host name: common/host_info.h.
#include "common/host_info.h"

#include <unistd.h>

#include <fstream>

namespace slowpipe {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown";
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
}

std::string describe_compute_dtype(const std::string& dtype, const std::string& device) {
  if (dtype != "bf16") return "fp32: every op in fp32";
  if (device.rfind("cuda", 0) == 0) {
    return "bf16 autocast on CUDA: matmuls in bf16 on tensor cores with fp32 accumulate; fp32 "
           "master weights, optimizer state and reductions";
  }
  if (cpu_has_flag("avx512_bf16") || cpu_has_flag("amx_bf16")) {
    return "bf16 autocast on a CPU with bf16 instructions: matmuls on bf16 operands with fp32 "
           "accumulate (oneDNN); fp32 master weights, optimizer state and reductions";
  }
  return "bf16 autocast on a CPU without bf16 instructions (no avx512_bf16 or amx_bf16): "
         "operands and results are rounded to bf16, but the arithmetic runs in fp32, so a run "
         "shows bf16's rounding, not its speed; fp32 master weights, optimizer state and "
         "reductions";
}

}  // namespace slowpipe
