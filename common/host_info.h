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

}  // namespace slowpipe
