// The `slowpipe` subcommands. Each takes the arguments after its name and
// returns the process exit code; usage errors are thrown as slowpipe::UsageError
// (exit 2), unusable inputs as slowpipe::DataError (exit 3).
#pragma once

#include <string>
#include <vector>

namespace slowpipe::cli {

using Args = std::vector<std::string>;

// Exit codes beside 0 (success), 1 (internal failure), 2 (usage error) and 3
// (unusable input data): a training run that met a NaN or infinity in its
// loss, activations or gradients stops cleanly with status "diverged".
constexpr int kExitDiverged = 4;
// A run stopped by SIGINT/SIGTERM (after its current step): 128 + SIGINT.
constexpr int kExitInterrupted = 130;

int cmd_train(const Args& args);
// The front's checks of `train` before it hands the run to slowpipe-torch
// (train_options.h): 0, or an exception as cmd_train would throw it.
int cmd_train_preflight(const Args& args);
int cmd_launch(const Args& args);
int cmd_export(const Args& args);
int cmd_codecs(const Args& args);
int cmd_codec(const Args& args);
int cmd_timing(const Args& args);
int cmd_clock(const Args& args);
int cmd_netsim(const Args& args);
int cmd_sweep(const Args& args);
int cmd_summary(const Args& args);
int cmd_plot(const Args& args);
int cmd_verdict(const Args& args);
int cmd_retime(const Args& args);

}  // namespace slowpipe::cli
