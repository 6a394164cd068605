// run.kernels: the kernel pins of `portable` and the record of what a run used
// (kernel_policy.h; the measurements behind it in docs/reproducibility.md).
#include "sim/kernel_policy.h"

#include <ATen/Context.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "common/errors.h"

namespace slowpipe::sim {
namespace {

bool is_portable(const std::string& kernels) {
  return kernels == "portable";
}

// This process's own argument vector, as the kernel passed it.
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string::size_type begin = 0;
  while (begin < all.size()) {
    const auto end = all.find('\0', begin);
    args.push_back(all.substr(begin, end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return args;
}

[[noreturn]] void reexecute() {
  std::vector<std::string> args = own_arguments();
  if (args.empty())
    throw std::runtime_error("run.kernels = portable: cannot read /proc/self/cmdline");
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  throw std::runtime_error(std::string("run.kernels = portable: cannot re-execute this program (") +
                           std::strerror(errno) + ")");
}

}  // namespace

const std::vector<KernelPin>& portable_kernel_pins() {
  static const std::vector<KernelPin> pins = {
      {"OPENBLAS_CORETYPE", "Haswell", "OpenBLAS (GEMM kernels)"},
      {"ATEN_CPU_CAPABILITY", "avx2", "ATen (vectorised element-wise and reduction kernels)"},
  };
  return pins;
}

std::vector<std::string> apply_kernel_policy(const std::string& kernels,
                                             const std::string& device) {
  if (!is_portable(kernels)) return {};
  if (device != "cpu") {
    throw UsageError("run.kernels = portable pins CPU kernels; run.device = " + device +
                     " computes on a GPU (use run.kernels = native there)");
  }
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    throw UsageError(
        "run.kernels = portable needs a CPU with AVX2 and FMA (Intel Haswell, AMD Zen or "
        "later); this one lacks them, so its kernels cannot match other hosts'");
  }
  std::vector<std::string> warnings;
  if (std::getenv(kKernelsPinnedVariable) == nullptr) {
    for (const KernelPin& pin : portable_kernel_pins()) {
      if (std::getenv(pin.variable) == nullptr) setenv(pin.variable, pin.value, /*overwrite=*/0);
    }
    setenv(kKernelsPinnedVariable, "1", /*overwrite=*/1);
    reexecute();
  }
  for (const KernelPin& pin : portable_kernel_pins()) {
    const char* v = std::getenv(pin.variable);
    if (v != nullptr && std::string(v) != pin.value) {
      warnings.push_back(std::string("run.kernels = portable: the environment sets ") +
                         pin.variable + "=" + v + " (portable: " + pin.value +
                         "); kept as it is, so this run's losses may differ from other hosts'");
    }
  }
  at::globalContext().setUserEnabledMkldnn(false);
  return warnings;
}

std::map<std::string, std::string> kernel_provenance(const std::string& kernels) {
  std::map<std::string, std::string> p;
  p["kernels.policy"] = kernels;
  using CoreName = char* (*)();
  auto* core = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  p["kernels.openblas_core"] = core != nullptr ? core() : "not OpenBLAS";
  const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
  p["kernels.aten_capability"] = cap != nullptr ? cap : "auto";
  p["kernels.onednn"] = at::globalContext().userEnabledMkldnn() ? "on" : "off";
  return p;
}

}  // namespace slowpipe::sim
