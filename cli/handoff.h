// The light front's hand-off: `slowpipe` links no libtorch, so a command that
// needs it (train, launch, codec) is run by slowpipe-torch, the
// full binary built in the same folder. The front replaces itself with it
// (execv): the same process id, arguments (argv[0] included), environment,
// standard streams and signal handling, so the caller sees one `slowpipe`
// process and its exit code. docs/cli-startup.md.
#pragma once

#include <string>

namespace slowpipe::cli {

// File name of the full binary, beside the front.
constexpr const char* kTorchBinaryName = "slowpipe-torch";

// The full binary's path: kTorchBinaryName in the folder of this executable
// (/proc/self/exe, symbolic links resolved). Empty when /proc/self/exe is unreadable.
std::string torch_binary_path();

// Runs `argv` (the front's own, null-terminated) with the full binary in place
// of this process. Returns only when it could not: after printing
//   slowpipe: cannot run 'COMMAND': PATH not found (...)
// or the reason execv gave, with exit code 1.
int hand_off(const std::string& command, char** argv);

}  // namespace slowpipe::cli
