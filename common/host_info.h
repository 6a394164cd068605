// What a log or a committed result records of the machine that made it: the
// CPU's model name and the host name. Linux only (/proc/cpuinfo, gethostname);
// elsewhere both say "unknown". Leaves out: core counts, ISA flags (the
// kernels a run used are logged by sim/kernel_policy.h).
#pragma once

#include <string>

namespace slowpipe {

// The first "model name" of /proc/cpuinfo; "unknown" where there is none.
std::string cpu_model_name();

// gethostname(); "unknown" when it fails.
std::string host_name();

// Whether /proc/cpuinfo's flags list `flag` ("avx512_bf16", "amx_bf16").
bool cpu_has_flag(const std::string& flag);

// What a run with run.dtype = `dtype` on `device` ("cpu", "cuda:0")
// actually computes in, in one sentence for the run log and the banner
// (docs/compute-clock.md, "bf16 training").
std::string describe_compute_dtype(const std::string& dtype, const std::string& device);

}  // namespace slowpipe
