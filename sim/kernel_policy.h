// Which CPU kernels libtorch and its BLAS use (`run.kernels`), and a record of
// the ones a run used.
//
// On CPU, losses are bit-identical from run to run on one machine, but not
// across machines: OpenBLAS picks its GEMM kernels by CPU model (AVX-512 on
// one host, AVX2 on another), ATen dispatches its vectorised kernels by CPU
// capability, and oneDNN (libtorch's convolutions) JIT-compiles kernels for
// the host's ISA and cache sizes. Each choice changes the order of floating
// point sums, so the last bits of every loss differ (docs/reproducibility.md).
//
//   native    (default) every library picks the fastest kernels for this CPU;
//   portable  the same kernels on every x86-64 CPU with AVX2 and FMA (Intel
//             Haswell and later, AMD Zen and later): OpenBLAS's Haswell
//             kernels, ATen's AVX2 kernels, convolutions through ATen's own
//             path (im2col + BLAS) instead of oneDNN.
//
// OpenBLAS reads its kernel choice (OPENBLAS_CORETYPE) only when it is loaded,
// so `portable` sets the environment and re-executes the process once, before
// anything is written. A variable already set in the environment is never
// overridden (some hosts need OPENBLAS_CORETYPE to run at all); a value other
// than the portable one is reported as a warning, since that run's losses may
// then differ from other hosts'. Leaves out: CUDA devices (cuBLAS and cuDNN
// choose by GPU; `portable` is refused there), thread counts other than the
// configured run.threads (the same on every host by construction).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace slowpipe::sim {

// One environment variable `portable` pins, with the value it pins.
struct KernelPin {
  const char* variable;
  const char* value;
  const char* what;  // which library reads it
};
const std::vector<KernelPin>& portable_kernel_pins();

// Environment marker set before the re-execution, so it happens once.
inline constexpr const char* kKernelsPinnedVariable = "SLOWPIPE_KERNELS_PINNED";

// For `run.kernels = portable` on a CPU device: sets the pins that are absent
// and re-executes this process (/proc/self/exe with /proc/self/cmdline), unless
// the marker says that happened already; after it, switches oneDNN off for
// this process. Returns the warnings to print (pins overridden by the
// environment). UsageError: `portable` on a CUDA device or on a CPU without
// AVX2 and FMA; std::runtime_error: the re-execution failed. `native`: does nothing.
std::vector<std::string> apply_kernel_policy(const std::string& kernels, const std::string& device);

// What this process runs, for the run log's root attributes:
// kernels.policy, kernels.openblas_core (OpenBLAS's own name for the kernels
// it loaded; "not OpenBLAS" when libtorch uses another BLAS),
// kernels.aten_capability (default|avx2|avx512), kernels.onednn (on|off).
std::map<std::string, std::string> kernel_provenance(const std::string& kernels);

}  // namespace slowpipe::sim
